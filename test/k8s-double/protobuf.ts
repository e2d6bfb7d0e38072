// The few protobuf messages the double must read: kubectl 1.32+ posts its
// SelfSubjectAccessReview (`auth can-i`) as application/vnd.kubernetes.protobuf
// and gives up on a 415. The body is the magic `k8s\0` and a runtime.Unknown
// {1: typeMeta, 2: raw}, raw being the SelfSubjectAccessReview
// {2: spec {1: resourceAttributes, 2: nonResourceAttributes}}.

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

type Fields = Map<number, (Buffer | bigint)[]>;

function fields(buf: Buffer): Fields {
  const out: Fields = new Map();
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[pos++];
      if (b === undefined) throw new Error('truncated protobuf varint');
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const tag = Number(varint());
    const field = tag >>> 3;
    let value: Buffer | bigint;
    switch (tag & 7) {
      case 0:
        value = varint();
        break;
      case 1:
        value = buf.subarray(pos, pos + 8);
        pos += 8;
        break;
      case 2: {
        const len = Number(varint());
        value = buf.subarray(pos, pos + len);
        pos += len;
        break;
      }
      case 5:
        value = buf.subarray(pos, pos + 4);
        pos += 4;
        break;
      default:
        throw new Error(`unsupported protobuf wire type ${tag & 7}`);
    }
    if (pos > buf.length) throw new Error('truncated protobuf message');
    const list = out.get(field) ?? [];
    list.push(value);
    out.set(field, list);
  }
  return out;
}

function bytes(f: Fields, n: number): Buffer | undefined {
  const v = f.get(n)?.[0];
  return Buffer.isBuffer(v) ? v : undefined;
}

function str(f: Fields, n: number): string | undefined {
  return bytes(f, n)?.toString('utf8');
}

export interface SsarSpec {
  resourceAttributes?: Record<string, string>;
  nonResourceAttributes?: { path: string; verb: string };
}

export interface Decoded {
  apiVersion?: string;
  kind?: string;
  spec: SsarSpec;
}

/** Decodes a protobuf-encoded SelfSubjectAccessReview. */
export function decodeSelfSubjectAccessReview(body: Buffer): Decoded {
  if (!body.subarray(0, 4).equals(MAGIC)) throw new Error('not a Kubernetes protobuf body');
  const unknown = fields(body.subarray(4));
  const typeMeta = fields(bytes(unknown, 1) ?? Buffer.alloc(0));
  const review = fields(bytes(unknown, 2) ?? Buffer.alloc(0));
  const spec = fields(bytes(review, 2) ?? Buffer.alloc(0));
  const out: Decoded = { spec: {} };
  const apiVersion = str(typeMeta, 1);
  const kind = str(typeMeta, 2);
  if (apiVersion !== undefined) out.apiVersion = apiVersion;
  if (kind !== undefined) out.kind = kind;
  const ra = bytes(spec, 1);
  if (ra !== undefined) {
    const f = fields(ra);
    const names = ['namespace', 'verb', 'group', 'version', 'resource', 'subresource', 'name'];
    const attrs: Record<string, string> = {};
    names.forEach((name, i) => {
      const v = str(f, i + 1);
      if (v !== undefined) attrs[name] = v;
    });
    out.spec.resourceAttributes = attrs;
  }
  const nra = bytes(spec, 2);
  if (nra !== undefined) {
    const f = fields(nra);
    out.spec.nonResourceAttributes = { path: str(f, 1) ?? '', verb: str(f, 2) ?? '' };
  }
  return out;
}

/** Decodes a protobuf-encoded SelfSubjectRulesReview (`kubectl auth can-i --list`): spec(2).namespace(1). */
export function decodeSelfSubjectRulesReview(body: Buffer): { spec: { namespace?: string } } {
  if (!body.subarray(0, 4).equals(MAGIC)) throw new Error('not a Kubernetes protobuf body');
  const unknown = fields(body.subarray(4));
  const review = fields(bytes(unknown, 2) ?? Buffer.alloc(0));
  const spec = fields(bytes(review, 2) ?? Buffer.alloc(0));
  const namespace = str(spec, 1);
  return { spec: namespace === undefined ? {} : { namespace } };
}
