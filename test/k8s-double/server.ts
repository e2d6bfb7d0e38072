// A Kubernetes API server double for tests (issue 13): HTTPS with its own CA,
// bearer tokens (a static admin token, tokens it mints through TokenRequest),
// discovery, objects in memory with 404 / 409 and resourceVersion, RBAC
// evaluated from the Roles and bindings it holds (with the escalation check),
// SelfSubjectAccessReview (JSON and kubectl's protobuf), exec over WebSocket,
// and a recording of every request. Never shipped: test/ only.

import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, request as httpsRequest } from 'node:https';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';

import { runControllers } from './controllers.js';
import { EXEC_PROTOCOLS, handleExecUpgrade } from './exec.js';
import { forwardPorts, handlePortForwardUpgrade } from './portforward.js';
import type { ExecRunner } from './exec.js';
import { jsonPatch, mergePatch, PatchError, strategicMergePatch } from './patch.js';
import type { Json } from './patch.js';
import { decodeSelfSubjectAccessReview, decodeSelfSubjectRulesReview } from './protobuf.js';
import { formatQuantity, parseQuantity } from './quantity.js';
import { authorize, MASTERS, rulesFor, uncovered } from './rbac.js';
import type { Attributes, PolicyRule, RbacObjects, RoleRef, UserInfo } from './rbac.js';
import {
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  findKind,
  findResource,
  groupVersion,
} from './resources.js';
import type { ResourceDef } from './resources.js';
import { ApiError, errors, qualified } from './status.js';
import { matchesFields, matchesLabels, parseLabelSelector, Store, timestamp } from './store.js';
import type { Change, KObject } from './store.js';
import { makeCerts } from './tls.js';
import type { ServingCerts } from './tls.js';
import { callMutatingWebhooks } from './webhooks.js';

export type { UserInfo } from './rbac.js';
export type { KObject } from './store.js';

export interface K8sDoubleOptions {
  /** Kubernetes minor version /version reports (the machine's kubectl picks 1.27–1.33 from it). Default 33. */
  readonly minorVersion?: number;
  /** The admin's bearer token (system:masters). Random by default. */
  readonly adminToken?: string;
  /** More static tokens and who they authenticate as. */
  readonly tokens?: Readonly<Record<string, UserInfo>>;
  /** TokenRequest's cap on expirationSeconds (--service-account-max-token-expiration). Default 86 400. */
  readonly maxTokenSeconds?: number;
  /** Assign pods to matching Ready nodes and mark them Running. Default true. */
  readonly scheduler?: boolean;
  /** Deployments/StatefulSets/ReplicaSets create and delete their pods. Default true. */
  readonly controllers?: boolean;
  /** How a pod exec runs locally (default: the command itself, under a pty when tty). */
  readonly execRunner?: ExecRunner;
  /**
   * The URL of a webhook given as a Service reference (clientConfig.service),
   * since Services do not route here. Without it such webhooks fail (and so
   * do pod creations under failurePolicy Fail).
   */
  readonly serviceUrl?: (service: {
    namespace: string;
    name: string;
    port: number;
    path: string;
  }) => string | undefined;
  readonly port?: number;
  /**
   * How long a deleted namespace stays Terminating (its content goes at once,
   * new content is refused with 403). Default 0: gone at once.
   */
  readonly namespaceTerminationMs?: number;
}

export interface RecordedRequest {
  readonly seq: number;
  readonly method: string;
  /** Path without the query. */
  readonly path: string;
  readonly query: string;
  /** Who made it: `admin`, `system:serviceaccount:<ns>:<name>`, or `` if unauthenticated. */
  readonly user: string;
  /** RBAC attributes of a resource request. */
  readonly verb?: string;
  readonly group?: string;
  readonly resource?: string;
  readonly subresource?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** The parsed JSON body of a write. */
  readonly body?: unknown;
  readonly contentType?: string;
  status: number;
}

interface MintedToken {
  user: UserInfo;
  namespace: string;
  serviceAccount: string;
  serviceAccountUid: string;
  bound?: { kind: string; name: string; uid: string };
  expiresAt: number;
}

export interface K8sDouble {
  readonly url: string;
  readonly port: number;
  readonly caPem: string;
  readonly certs: ServingCerts;
  readonly adminToken: string;
  /** Every request so far, in order. */
  readonly requests: RecordedRequest[];
  /**
   * The resource requests so far (discovery left out), one line each:
   * `<verb> <resource>[/<sub>][.<group>] <ns>/<name> <status>`, e.g.
   * `create rolebindings.rbac.authorization.k8s.io lease-1/buyer 201`;
   * only `user`'s when given.
   */
  calls(user?: string): string[];
  readonly store: Store;
  /** A kubeconfig (JSON, which is YAML) for the double with this token. */
  kubeconfigFor(token: string, namespace?: string): string;
  addToken(token: string, user: UserInfo): void;
  /** Makes tokens' clock run ahead (to expire minted tokens). */
  advanceClock(seconds: number): void;
  /**
   * The exec subprotocols the double speaks from now on, best first (default
   * v5 then v4); `['v4.channel.k8s.io']` is an API server before 1.30, whose
   * exec cannot close stdin alone.
   */
  setExecProtocols(protocols: readonly string[]): void;
  /** Objects as stored, bypassing the API (for assertions and setup). */
  get(apiVersion: string, kind: string, namespace: string, name: string): KObject | undefined;
  list(apiVersion: string, kind: string, namespace?: string): KObject[];
  /** Creates or replaces an object directly, as the admin (setup: nodes, the agent's RBAC). */
  put(obj: KObject): KObject;
  /** Mints a token for a service account as TokenRequest does (setup). */
  mintToken(
    namespace: string,
    serviceAccount: string,
    seconds?: number,
    bound?: { kind: string; name: string },
  ): string;
  /**
   * One HTTPS call to the double (as the admin unless `token` is given); the
   * answer's status and parsed JSON body (or text).
   */
  call(
    method: string,
    path: string,
    opts?: { token?: string; body?: unknown; contentType?: string },
  ): Promise<{ status: number; body: unknown }>;
  stop(): Promise<void>;
}

const JSON_TYPE = 'application/json';

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export interface ResourcePath {
  group: string;
  version: string;
  plural: string;
  namespace: string;
  name: string;
  subresource: string;
  watch: boolean;
}

type Route =
  | { kind: 'doc'; body: object | undefined }
  | { kind: 'resource'; path: ResourcePath }
  | { kind: 'nonresource' };

function route(pathname: string): Route {
  const seg = pathname.split('/').filter((s) => s !== '');
  let group: string;
  let version: string;
  let rest: string[];
  if (seg[0] === 'api') {
    if (seg.length === 1) return { kind: 'doc', body: apiVersions() };
    group = '';
    version = seg[1] ?? '';
    rest = seg.slice(2);
  } else if (seg[0] === 'apis') {
    if (seg.length === 1) return { kind: 'doc', body: apiGroupList() };
    if (seg.length === 2) return { kind: 'doc', body: apiGroup(seg[1] ?? '') };
    group = seg[1] ?? '';
    version = seg[2] ?? '';
    rest = seg.slice(3);
  } else return { kind: 'nonresource' };
  if (rest.length === 0) return { kind: 'doc', body: apiResourceList(group, version) };
  let watch = false;
  if (rest[0] === 'watch') {
    watch = true;
    rest = rest.slice(1);
  }
  let namespace = '';
  if (
    rest[0] === 'namespaces' &&
    rest.length >= 3 &&
    !(group === '' && rest.length === 3 && (rest[2] === 'status' || rest[2] === 'finalize'))
  ) {
    namespace = rest[1] ?? '';
    rest = rest.slice(2);
  }
  const path: ResourcePath = {
    group,
    version,
    plural: rest[0] ?? '',
    namespace,
    name: rest[1] ?? '',
    subresource: rest[2] ?? '',
    watch,
  };
  // A request on a namespace itself is in that namespace (RBAC's RequestInfo).
  if (group === '' && path.plural === 'namespaces' && path.name !== '') path.namespace = path.name;
  return { kind: 'resource', path };
}

function verbOf(method: string, path: ResourcePath, query: URLSearchParams): string {
  switch (method) {
    case 'GET':
    case 'HEAD':
      if (path.name === '') return path.watch || query.get('watch') === 'true' ? 'watch' : 'list';
      return 'get';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return path.name === '' ? 'deletecollection' : 'delete';
    default:
      return method.toLowerCase();
  }
}

function describeUser(user: UserInfo): string {
  return user.username.startsWith('system:serviceaccount:')
    ? `User "${user.username}"`
    : `User "${user.username}"`;
}

/** The message of a 403, as the real authorizer words it. */
export function forbiddenWhy(user: UserInfo, a: Attributes): string {
  const res = a.subresource === '' ? a.resource : `${a.resource}/${a.subresource}`;
  const where = a.namespace === '' ? 'at the cluster scope' : `in the namespace "${a.namespace}"`;
  return `${describeUser(user)} cannot ${a.verb} resource "${res}" in API group "${a.group}" ${where}`;
}

export async function startK8sDouble(opts: K8sDoubleOptions = {}): Promise<K8sDouble> {
  const certs = makeCerts();
  const adminToken = opts.adminToken ?? `admin-${randomBytes(16).toString('hex')}`;
  const maxTokenSeconds = opts.maxTokenSeconds ?? 86_400;
  const minor = opts.minorVersion ?? 33;
  let clockOffset = 0;
  const now = (): number => Date.now() + clockOffset * 1000;
  const store = new Store(now);
  const requests: RecordedRequest[] = [];
  const statics = new Map<string, UserInfo>([
    [adminToken, { username: 'admin', groups: [MASTERS, 'system:authenticated'] }],
  ]);
  for (const [t, u] of Object.entries(opts.tokens ?? {})) statics.set(t, u);
  const minted = new Map<string, MintedToken>();
  const def = (group: string, plural: string): ResourceDef => {
    const d = findResource(
      group,
      group === '' ? 'v1' : group === 'autoscaling' ? 'v2' : 'v1',
      plural,
    );
    if (d === undefined) throw new Error(`no resource ${group}/${plural}`);
    return d;
  };
  const NS = def('', 'namespaces');
  const SA = def('', 'serviceaccounts');

  const rbacObjects: RbacObjects = {
    role: (ns, name) => store.get(def('rbac.authorization.k8s.io', 'roles'), ns, name) as never,
    clusterRole: (name) =>
      store.get(def('rbac.authorization.k8s.io', 'clusterroles'), '', name) as never,
    roleBindings: (ns) => store.list(def('rbac.authorization.k8s.io', 'rolebindings'), ns) as never,
    clusterRoleBindings: () =>
      store.list(def('rbac.authorization.k8s.io', 'clusterrolebindings'), '') as never,
  };

  /**
   * Who the request is from: its bearer token's identity, or the identity it
   * impersonates (Impersonate-User / Impersonate-Group, as `kubectl --as`),
   * when the token's identity may `impersonate` it.
   */
  function authenticate(req: IncomingMessage): UserInfo | undefined {
    const user = authenticateToken(req);
    const as = req.headers['impersonate-user'];
    if (user === undefined || typeof as !== 'string') return user;
    const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(as);
    const attrs: Attributes =
      sa === null
        ? {
            verb: 'impersonate',
            group: '',
            resource: 'users',
            subresource: '',
            namespace: '',
            name: as,
          }
        : {
            verb: 'impersonate',
            group: '',
            resource: 'serviceaccounts',
            subresource: '',
            namespace: sa[1] ?? '',
            name: sa[2] ?? '',
          };
    if (!authorize(rbacObjects, user, attrs)) {
      throw errors.forbidden('', attrs.resource, as, forbiddenWhy(user, attrs));
    }
    const h = req.headers['impersonate-group'];
    const groups = h === undefined ? [] : Array.isArray(h) ? h : [h];
    if (sa !== null) groups.push('system:serviceaccounts', `system:serviceaccounts:${sa[1] ?? ''}`);
    return { username: as, groups: [...groups, 'system:authenticated'] };
  }

  function authenticateToken(req: IncomingMessage): UserInfo | undefined {
    const h = req.headers.authorization ?? '';
    const m = /^Bearer\s+(\S+)$/i.exec(h);
    if (m === null) return undefined;
    const token = m[1] ?? '';
    const s = statics.get(token);
    if (s !== undefined) return s;
    const t = minted.get(token);
    if (t === undefined) return undefined;
    if (now() >= t.expiresAt) return undefined;
    const sa = store.get(SA, t.namespace, t.serviceAccount);
    if (sa?.metadata.uid !== t.serviceAccountUid) return undefined;
    if (t.bound !== undefined) {
      const bd = findKind('v1', t.bound.kind);
      const o = bd === undefined ? undefined : store.get(bd, t.namespace, t.bound.name);
      if (o?.metadata.uid !== t.bound.uid) return undefined;
    }
    return t.user;
  }

  function mint(
    namespace: string,
    name: string,
    seconds: number,
    bound?: { kind: string; name: string; uid: string },
  ): { token: string; expiresAt: number } {
    const sa = store.get(SA, namespace, name);
    if (sa === undefined) throw errors.notFound('', 'serviceaccounts', name);
    const expiresAt = now() + seconds * 1000;
    const username = `system:serviceaccount:${namespace}:${name}`;
    const b64 = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');
    const token = [
      b64({ alg: 'RS256', kid: 'k8s-double' }),
      b64({
        aud: ['https://kubernetes.default.svc'],
        exp: Math.floor(expiresAt / 1000),
        iat: Math.floor(now() / 1000),
        sub: username,
        jti: randomUUID(),
      }),
      randomBytes(32).toString('base64url'),
    ].join('.');
    minted.set(token, {
      user: {
        username,
        uid: sa.metadata.uid ?? '',
        groups: [
          'system:serviceaccounts',
          `system:serviceaccounts:${namespace}`,
          'system:authenticated',
        ],
      },
      namespace,
      serviceAccount: name,
      serviceAccountUid: sa.metadata.uid ?? '',
      ...(bound === undefined ? {} : { bound }),
      expiresAt,
    });
    return { token, expiresAt };
  }

  function requireNamespace(ns: string): void {
    const n = store.get(NS, '', ns);
    if (n === undefined) throw errors.notFound('', 'namespaces', ns);
    if (n.metadata.deletionTimestamp !== undefined) {
      throw new ApiError(
        403,
        'Forbidden',
        `unable to create new content in namespace ${ns} because it is being terminated`,
      );
    }
  }

  /** RBAC's escalation check on a Role/ClusterRole or a binding written by `user`. */
  function checkEscalation(user: UserInfo, d: ResourceDef, obj: KObject, namespace: string): void {
    if (user.groups.includes(MASTERS)) return;
    const name = obj.metadata.name ?? '';
    const may = (verb: string, resource: string, resName: string): boolean =>
      authorize(rbacObjects, user, {
        verb,
        group: 'rbac.authorization.k8s.io',
        resource,
        subresource: '',
        namespace,
        name: resName,
      });
    const owner = rulesFor(rbacObjects, user, namespace);
    if (d.plural === 'roles' || d.plural === 'clusterroles') {
      if (may('escalate', d.plural, name)) return;
      const missing = uncovered(owner, (obj['rules'] as PolicyRule[] | undefined) ?? []);
      if (missing.length > 0) {
        throw errors.forbidden(
          d.group,
          d.plural,
          name,
          `user "${user.username}" (groups=[${user.groups.map((g) => JSON.stringify(g)).join(' ')}]) is attempting to grant RBAC permissions not currently held:\n${missing.join('\n')}`,
        );
      }
    } else if (d.plural === 'rolebindings' || d.plural === 'clusterrolebindings') {
      const ref = obj['roleRef'] as RoleRef | undefined;
      if (ref === undefined) throw errors.invalid(d.kind, d.group, name, 'roleRef: Required value');
      const refPlural = ref.kind === 'ClusterRole' ? 'clusterroles' : 'roles';
      if (may('bind', refPlural, ref.name)) return;
      const role =
        ref.kind === 'ClusterRole'
          ? rbacObjects.clusterRole(ref.name)
          : rbacObjects.role(namespace, ref.name);
      if (role === undefined) {
        throw errors.notFound('rbac.authorization.k8s.io', refPlural, ref.name);
      }
      const missing = uncovered(owner, role.rules ?? []);
      if (missing.length > 0) {
        throw errors.forbidden(
          d.group,
          d.plural,
          name,
          `user "${user.username}" (groups=[${user.groups.map((g) => JSON.stringify(g)).join(' ')}]) is attempting to grant RBAC permissions not currently held:\n${missing.join('\n')}`,
        );
      }
    }
  }

  /** ResourceQuota admission for a new pod or service in `namespace`. */
  function checkQuota(d: ResourceDef, obj: KObject, namespace: string): void {
    if (d.group !== '' || (d.plural !== 'pods' && d.plural !== 'services')) return;
    for (const quota of store.list(def('', 'resourcequotas'), namespace)) {
      const hard = (quota['spec'] as { hard?: Record<string, unknown> } | undefined)?.hard ?? {};
      const usage = (items: KObject[]): Record<string, number> => {
        const u: Record<string, number> = {};
        const add = (k: string, n: number): void => {
          u[k] = (u[k] ?? 0) + n;
        };
        for (const o of items) {
          add(d.plural, 1);
          add(`count/${d.plural}`, 1);
          const spec = (o['spec'] ?? {}) as Record<string, unknown>;
          if (d.plural === 'services') {
            if (spec['type'] === 'NodePort') add('services.nodeports', 1);
            if (spec['type'] === 'LoadBalancer') add('services.loadbalancers', 1);
          } else {
            const phase = (o['status'] as { phase?: string } | undefined)?.phase;
            if (phase === 'Succeeded' || phase === 'Failed') continue;
            for (const c of (spec['containers'] as Record<string, unknown>[] | undefined) ?? []) {
              const res = (c['resources'] ?? {}) as Record<string, Record<string, unknown>>;
              for (const kind of ['requests', 'limits']) {
                for (const [rn, q] of Object.entries(res[kind] ?? {})) {
                  add(`${kind}.${rn}`, parseQuantity(q));
                  if (kind === 'requests' && (rn === 'cpu' || rn === 'memory'))
                    add(rn, parseQuantity(q));
                }
              }
            }
          }
        }
        return u;
      };
      const used = usage(store.list(d, namespace));
      const requested = usage([obj]);
      const over: string[] = [];
      for (const [k, limit] of Object.entries(hard)) {
        const r = requested[k];
        if (r === undefined || r === 0) continue;
        const u = used[k] ?? 0;
        if (u + r > parseQuantity(limit)) over.push(k);
      }
      if (over.length > 0) {
        const fmt = (m: Record<string, number>): string =>
          over.map((k) => `${k}=${formatQuantity(m[k] ?? 0)}`).join(',');
        const limited = over.map((k) => `${k}=${String(hard[k])}`).join(',');
        throw errors.forbidden(
          '',
          d.plural,
          obj.metadata.name ?? '',
          `exceeded quota: ${quota.metadata.name ?? ''}, requested: ${fmt(requested)}, used: ${fmt(used)}, limited: ${limited}`,
        );
      }
    }
  }

  /** Type-specific defaults on create, as the real registries fill them. */
  function defaults(d: ResourceDef, obj: KObject): void {
    const spec = isObject(obj['spec']) ? obj['spec'] : {};
    if (d.group === '' && d.plural === 'namespaces') {
      obj.metadata.labels = {
        ...(obj.metadata.labels ?? {}),
        'kubernetes.io/metadata.name': obj.metadata.name ?? '',
      };
      obj['spec'] = { finalizers: ['kubernetes'], ...spec };
      obj['status'] = { phase: 'Active' };
    } else if (d.group === '' && d.plural === 'pods') {
      obj['spec'] = { restartPolicy: 'Always', dnsPolicy: 'ClusterFirst', ...spec };
      obj['status'] = { phase: 'Pending', qosClass: 'BestEffort' };
    } else if (d.group === '' && d.plural === 'services') {
      obj['spec'] = {
        type: 'ClusterIP',
        clusterIP: `10.96.${randomBytes(1)[0] ?? 0}.${((randomBytes(1)[0] ?? 0) % 250) + 2}`,
        ...spec,
      };
    } else if (d.group === '' && d.plural === 'secrets') {
      obj['type'] ??= 'Opaque';
    } else if (d.group === '' && d.plural === 'resourcequotas') {
      obj['status'] = { hard: (spec['hard'] as object | undefined) ?? {}, used: {} };
    }
  }

  function parseJson(body: Buffer): unknown {
    try {
      return JSON.parse(body.toString('utf8')) as unknown;
    } catch (err) {
      throw errors.badRequest(`the body could not be decoded: ${String(err)}`);
    }
  }

  function toObject(d: ResourceDef, raw: unknown, path: ResourcePath): KObject {
    if (!isObject(raw)) throw errors.badRequest('the body is not an object');
    const obj = raw as KObject;
    obj.metadata = isObject(obj.metadata) ? obj.metadata : {};
    if (obj.kind !== undefined && obj.kind !== d.kind) {
      throw errors.badRequest(
        `the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${groupVersion(d)}) or kind ${String(obj.kind)} is not ${d.kind}`,
      );
    }
    if (d.namespaced) {
      const ns = obj.metadata.namespace;
      if (ns !== undefined && ns !== '' && ns !== path.namespace) {
        throw errors.badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      obj.metadata.namespace = path.namespace;
    }
    return obj;
  }

  async function create(
    user: UserInfo,
    d: ResourceDef,
    path: ResourcePath,
    raw: unknown,
    dryRun: boolean,
  ): Promise<KObject> {
    const obj = toObject(d, raw, path);
    if ((obj.metadata.name ?? '') === '') {
      if ((obj.metadata.generateName ?? '') === '') {
        throw errors.invalid(
          d.kind,
          d.group,
          '',
          'metadata.name: Required value: name or generateName is required',
        );
      }
      obj.metadata.name = `${obj.metadata.generateName ?? ''}${randomBytes(4).toString('hex').slice(0, 5)}`;
    }
    const name = obj.metadata.name ?? '';
    if (d.namespaced) requireNamespace(path.namespace);
    if (store.get(d, path.namespace, name) !== undefined) {
      throw errors.alreadyExists(d.group, d.plural, name);
    }
    checkEscalation(user, d, obj, path.namespace);
    defaults(d, obj);
    delete obj.metadata.resourceVersion;
    let admitted = obj;
    if (d.group === '' && d.plural === 'pods') {
      admitted = await callMutatingWebhooks(
        { store, certs, serviceUrl: opts.serviceUrl, nsDef: NS },
        d,
        obj,
        user,
        'CREATE',
      );
    }
    checkQuota(d, admitted, path.namespace);
    if (dryRun) return admitted;
    const saved = store.insert(d, admitted);
    return saved;
  }

  function checkedUpdate(
    user: UserInfo,
    d: ResourceDef,
    path: ResourcePath,
    next: KObject,
    sub: string,
  ): KObject {
    const existing = store.get(d, path.namespace, path.name);
    if (existing === undefined) throw errors.notFound(d.group, d.plural, path.name);
    if ((next.metadata.name ?? path.name) !== path.name) {
      throw errors.badRequest(
        `the name of the object (${String(next.metadata.name)}) does not match the name on the URL (${path.name})`,
      );
    }
    next.metadata.name = path.name;
    const rv = next.metadata.resourceVersion;
    if (rv !== undefined && rv !== '' && rv !== existing.metadata.resourceVersion) {
      throw errors.conflict(d.group, d.plural, path.name);
    }
    if (
      next.metadata.uid !== undefined &&
      next.metadata.uid !== '' &&
      next.metadata.uid !== existing.metadata.uid
    ) {
      throw new ApiError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${qualified(d.group, d.plural)} "${path.name}": Precondition failed: UID in precondition: ${next.metadata.uid}, UID in object meta: ${existing.metadata.uid ?? ''}`,
        { name: path.name, kind: d.plural },
      );
    }
    checkEscalation(user, d, next, path.namespace);
    let merged: KObject;
    if (sub === 'status') {
      merged = { ...existing, status: next['status'] };
    } else {
      merged = { ...next, metadata: { ...next.metadata } };
      // The main resource leaves status alone; the status subresource owns it.
      if ('status' in existing && d.subresources?.['status'] !== undefined)
        merged['status'] = existing['status'];
      else if (!('status' in next) && 'status' in existing) merged['status'] = existing['status'];
    }
    if (existing.metadata.deletionTimestamp === undefined) delete merged.metadata.deletionTimestamp;
    else merged.metadata.deletionTimestamp = existing.metadata.deletionTimestamp;
    const saved = store.update(d, merged);
    return saved;
  }

  function applyPatch(contentType: string, target: KObject, body: Buffer): KObject {
    const patch = parseJson(body) as Json;
    try {
      let out: Json;
      if (contentType.startsWith('application/merge-patch+json'))
        out = mergePatch(target as never, patch);
      else if (contentType.startsWith('application/strategic-merge-patch+json')) {
        out = strategicMergePatch(target as never, patch);
      } else if (contentType.startsWith('application/json-patch+json'))
        out = jsonPatch(target as never, patch);
      else throw errors.unsupportedMediaType(contentType);
      if (!isObject(out)) throw errors.badRequest('the patch did not leave an object');
      return out as KObject;
    } catch (err) {
      if (err instanceof PatchError) throw new ApiError(422, 'Invalid', err.message);
      throw err;
    }
  }

  function remove(
    d: ResourceDef,
    namespace: string,
    name: string,
    propagation: string,
  ): KObject | undefined {
    const terminationMs = opts.namespaceTerminationMs ?? 0;
    if (d.group === '' && d.plural === 'namespaces' && terminationMs > 0) {
      // Terminating first: content goes, new content is refused, the namespace itself later.
      const ns = store.get(d, '', name);
      if (ns === undefined) return undefined;
      for (const { def: od, object } of store.inNamespace(name)) {
        store.remove(od, name, object.metadata.name ?? '');
      }
      if (ns.metadata.deletionTimestamp !== undefined) return ns;
      const timer = setTimeout(() => {
        timers.delete(timer);
        store.remove(d, '', name);
      }, terminationMs);
      timers.add(timer);
      return store.update(d, {
        ...ns,
        metadata: { ...ns.metadata, deletionTimestamp: timestamp(now()) },
        status: { phase: 'Terminating' },
      });
    }
    const gone = store.remove(d, namespace, name);
    if (gone === undefined) return undefined;
    if (d.group === '' && d.plural === 'namespaces') {
      for (const { def: od, object } of store.inNamespace(name)) {
        store.remove(od, name, object.metadata.name ?? '');
      }
    } else if (propagation !== 'Orphan' && gone.metadata.uid !== undefined) {
      // The garbage collector: dependents go with their owner.
      for (const { def: od, object } of store.inNamespace(namespace)) {
        if ((object.metadata.ownerReferences ?? []).some((r) => r.uid === gone.metadata.uid)) {
          remove(od, namespace, object.metadata.name ?? '', propagation);
        }
      }
    }
    return gone;
  }

  const timers = new Set<NodeJS.Timeout>();
  // The control plane's passes: after any change to what controllers or the
  // scheduler look at, one pass at a time, again while changes keep coming.
  const CONTROLLED = new Set([
    'Pod',
    'Node',
    'Deployment',
    'ReplicaSet',
    'StatefulSet',
    'ResourceQuota',
    'Namespace',
    'MutatingWebhookConfiguration',
  ]);
  let queued = false;
  let busy = false;
  const controlPlaneCtx = {
    store,
    scheduler: opts.scheduler ?? true,
    controllers: opts.controllers ?? true,
  };
  const createPodAsController = (pod: KObject): Promise<KObject> =>
    create(
      admin,
      def('', 'pods'),
      {
        group: '',
        version: 'v1',
        plural: 'pods',
        namespace: pod.metadata.namespace ?? '',
        name: '',
        subresource: '',
        watch: false,
      },
      pod,
      false,
    );
  function afterWrite(): void {
    queued = true;
    if (busy) return;
    busy = true;
    setImmediate(() => {
      void (async () => {
        while (queued) {
          queued = false;
          try {
            await runControllers(controlPlaneCtx, createPodAsController, (d, ns, name) =>
              remove(d, ns, name, 'Background'),
            );
          } catch (err) {
            controllerErrors.push(err);
          }
        }
        busy = false;
      })();
    });
  }
  store.changes.on('change', (c: Change) => {
    if (CONTROLLED.has(c.def.kind)) afterWrite();
  });
  const controllerErrors: unknown[] = [];
  const admin: UserInfo = { username: 'system:kube-controller-manager', groups: [MASTERS] };

  function scaleOf(o: KObject): object {
    const spec = (o['spec'] ?? {}) as {
      replicas?: number;
      selector?: { matchLabels?: Record<string, string> };
    };
    const status = (o['status'] ?? {}) as { replicas?: number };
    return {
      kind: 'Scale',
      apiVersion: 'autoscaling/v1',
      metadata: {
        name: o.metadata.name,
        namespace: o.metadata.namespace,
        uid: o.metadata.uid,
        resourceVersion: o.metadata.resourceVersion,
        creationTimestamp: o.metadata.creationTimestamp,
      },
      spec: { replicas: spec.replicas ?? 1 },
      status: {
        replicas: status.replicas ?? 0,
        selector: Object.entries(spec.selector?.matchLabels ?? {})
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
      },
    };
  }

  function listOf(d: ResourceDef, items: KObject[]): object {
    return {
      kind: `${d.kind}List`,
      apiVersion: groupVersion(d),
      metadata: { resourceVersion: store.resourceVersion },
      items: items.map((o) => {
        const { apiVersion: _a, kind: _k, ...rest } = o;
        return rest;
      }),
    };
  }

  function selected(query: URLSearchParams, items: KObject[]): KObject[] {
    let reqs;
    try {
      reqs = parseLabelSelector(query.get('labelSelector') ?? '');
    } catch (err) {
      throw errors.badRequest(`unable to parse requirement: ${String(err)}`);
    }
    const fields = query.get('fieldSelector') ?? '';
    return items.filter((o) => matchesLabels(o, reqs) && matchesFields(o, fields));
  }

  function watch(
    req: IncomingMessage,
    res: ServerResponse,
    d: ResourceDef,
    path: ResourcePath,
    query: URLSearchParams,
  ): void {
    res.writeHead(200, { 'content-type': JSON_TYPE, 'transfer-encoding': 'chunked' });
    const nameFilter = path.name !== '' ? path.name : undefined;
    const matches = (o: KObject): boolean =>
      (!d.namespaced || path.namespace === '' || o.metadata.namespace === path.namespace) &&
      (nameFilter === undefined || o.metadata.name === nameFilter) &&
      selected(query, [o]).length === 1;
    const write = (type: string, o: KObject): void => {
      res.write(`${JSON.stringify({ type, object: o })}\n`);
    };
    const rv = query.get('resourceVersion') ?? '';
    if (rv === '' || rv === '0') {
      for (const o of store.list(d, path.namespace)) if (matches(o)) write('ADDED', o);
    }
    const listener = (c: Change): void => {
      if (c.def !== d || !matches(c.object)) return;
      write(c.type, c.object);
    };
    store.changes.on('change', listener);
    const timeout = Number(query.get('timeoutSeconds') ?? '1800');
    const timer = setTimeout(() => res.end(), timeout * 1000);
    const done = (): void => {
      clearTimeout(timer);
      store.changes.off('change', listener);
    };
    res.on('close', done);
    req.on('close', done);
    open.add(res);
    res.on('close', () => open.delete(res));
  }
  const open = new Set<ServerResponse>();

  async function handle(
    req: IncomingMessage,
    res: ServerResponse,
    rec: { status: number },
  ): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://double');
    const query = url.searchParams;
    const method = req.method ?? 'GET';
    const user = authenticate(req);
    const r = route(url.pathname);
    const entry = rec as unknown as Record<string, unknown>;
    entry['user'] = user?.username ?? '';
    if (user === undefined) throw errors.unauthorized();

    if (r.kind === 'nonresource' || r.kind === 'doc') {
      if (
        !authorize(rbacObjects, user, {
          verb: method === 'GET' ? 'get' : method.toLowerCase(),
          group: '',
          resource: '',
          subresource: '',
          namespace: '',
          name: '',
          path: url.pathname,
        })
      ) {
        throw new ApiError(
          403,
          'Forbidden',
          `forbidden: User "${user.username}" cannot ${method.toLowerCase()} path "${url.pathname}"`,
        );
      }
      if (r.kind === 'doc') {
        if (r.body === undefined) throw errors.pathNotFound();
        return send(res, 200, r.body);
      }
      if (url.pathname === '/version') {
        return send(res, 200, {
          major: '1',
          minor: String(minor),
          gitVersion: `v1.${minor}.0`,
          gitCommit: '0000000000000000000000000000000000000000',
          gitTreeState: 'clean',
          buildDate: '2025-01-01T00:00:00Z',
          goVersion: 'go1.23.0',
          compiler: 'gc',
          platform: 'linux/amd64',
        });
      }
      if (['/healthz', '/livez', '/readyz'].includes(url.pathname)) {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok');
        return;
      }
      throw errors.pathNotFound();
    }

    const path = r.path;
    const d = findResource(path.group, path.version, path.plural);
    if (d === undefined) throw errors.pathNotFound();
    if (path.subresource !== '' && d.subresources?.[path.subresource] === undefined) {
      throw errors.pathNotFound();
    }
    const verb = verbOf(method, path, query);
    Object.assign(entry, {
      verb,
      group: path.group,
      resource: path.plural,
      subresource: path.subresource,
      namespace: path.namespace,
      name: path.name,
    });
    const attrs: Attributes = {
      verb,
      group: path.group,
      resource: path.plural,
      subresource: path.subresource,
      namespace: path.namespace,
      name: path.name,
    };
    if (!authorize(rbacObjects, user, attrs)) {
      throw errors.forbidden(
        path.group,
        path.subresource === '' ? path.plural : `${path.plural}/${path.subresource}`,
        path.name,
        forbiddenWhy(user, attrs),
      );
    }
    const contentType = (req.headers['content-type'] ?? '').toLowerCase();
    const body = method === 'GET' || method === 'HEAD' ? Buffer.alloc(0) : await readBody(req);
    if (contentType !== '') entry['contentType'] = contentType;
    const isProto = contentType.startsWith('application/vnd.kubernetes.protobuf');
    let parsed: unknown;
    if (body.length > 0) {
      if (isProto && d.plural === 'selfsubjectaccessreviews') {
        try {
          parsed = decodeSelfSubjectAccessReview(body);
        } catch (err) {
          throw errors.badRequest(String(err));
        }
      } else if (isProto && d.plural === 'selfsubjectrulesreviews') {
        try {
          parsed = decodeSelfSubjectRulesReview(body);
        } catch (err) {
          throw errors.badRequest(String(err));
        }
      } else if (isProto) throw errors.unsupportedMediaType(contentType);
      else parsed = parseJson(body);
      entry['body'] = parsed;
    }
    const dryRun = query.get('dryRun') === 'All';

    // Reviews and token requests: answered, not stored.
    if (d.plural === 'selfsubjectaccessreviews') {
      if (method !== 'POST') throw errors.methodNotAllowed();
      const spec = (isObject(parsed) && isObject(parsed['spec']) ? parsed['spec'] : {}) as {
        resourceAttributes?: Record<string, string>;
        nonResourceAttributes?: { path?: string; verb?: string };
      };
      let allowed: boolean;
      if (spec.nonResourceAttributes !== undefined) {
        allowed = authorize(rbacObjects, user, {
          verb: spec.nonResourceAttributes.verb ?? '',
          group: '',
          resource: '',
          subresource: '',
          namespace: '',
          name: '',
          path: spec.nonResourceAttributes.path ?? '',
        });
      } else {
        const ra = spec.resourceAttributes ?? {};
        allowed = authorize(rbacObjects, user, {
          verb: ra['verb'] ?? '',
          group: ra['group'] ?? '',
          resource: ra['resource'] ?? '',
          subresource: ra['subresource'] ?? '',
          namespace: ra['namespace'] ?? '',
          name: ra['name'] ?? '',
        });
      }
      return send(res, 201, {
        kind: 'SelfSubjectAccessReview',
        apiVersion: 'authorization.k8s.io/v1',
        metadata: { creationTimestamp: null },
        spec,
        status: allowed ? { allowed: true, reason: 'RBAC: allowed' } : { allowed: false },
      });
    }
    if (d.plural === 'selfsubjectrulesreviews') {
      const namespace =
        (isObject(parsed) && isObject(parsed['spec']) ? parsed['spec']['namespace'] : undefined) ??
        '';
      if (typeof namespace !== 'string' || namespace === '') {
        throw errors.invalid(
          'SelfSubjectRulesReview',
          'authorization.k8s.io',
          '',
          'spec.namespace: Required value',
        );
      }
      const rules = user.groups.includes(MASTERS)
        ? [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }]
        : rulesFor(rbacObjects, user, namespace);
      const resourceRules = [
        {
          verbs: ['create'],
          apiGroups: ['authorization.k8s.io'],
          resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
        },
        ...rules
          .filter((r) => r.nonResourceURLs === undefined || r.nonResourceURLs.length === 0)
          .map((r) => ({
            verbs: r.verbs,
            apiGroups: r.apiGroups ?? [],
            resources: r.resources ?? [],
            ...(r.resourceNames === undefined ? {} : { resourceNames: r.resourceNames }),
          })),
      ];
      return send(res, 201, {
        kind: 'SelfSubjectRulesReview',
        apiVersion: 'authorization.k8s.io/v1',
        metadata: { creationTimestamp: null },
        spec: { namespace },
        status: {
          resourceRules,
          nonResourceRules: [
            {
              verbs: ['get'],
              nonResourceURLs: [
                '/api',
                '/api/*',
                '/apis',
                '/apis/*',
                '/version',
                '/healthz',
                '/livez',
                '/readyz',
              ],
            },
          ],
          incomplete: false,
        },
      });
    }
    if (d.plural === 'selfsubjectreviews') {
      return send(res, 201, {
        kind: 'SelfSubjectReview',
        apiVersion: 'authentication.k8s.io/v1',
        metadata: { creationTimestamp: null },
        status: { userInfo: { username: user.username, uid: user.uid, groups: user.groups } },
      });
    }
    if (d.plural === 'serviceaccounts' && path.subresource === 'token') {
      if (method !== 'POST') throw errors.methodNotAllowed();
      const tr = (isObject(parsed) ? parsed : {}) as {
        spec?: {
          expirationSeconds?: number;
          audiences?: string[];
          boundObjectRef?: { kind?: string; apiVersion?: string; name?: string; uid?: string };
        };
      };
      const spec = tr.spec ?? {};
      const seconds = spec.expirationSeconds ?? 3600;
      if (seconds < 600) {
        throw errors.invalid(
          'TokenRequest',
          'authentication.k8s.io',
          path.name,
          `spec.expirationSeconds: Invalid value: ${seconds}: may not specify a duration less than 10 minutes`,
        );
      }
      if (seconds > 2 ** 32) {
        throw errors.invalid(
          'TokenRequest',
          'authentication.k8s.io',
          path.name,
          `spec.expirationSeconds: Invalid value: ${seconds}: may not specify a duration larger than 2^32 seconds`,
        );
      }
      let bound: { kind: string; name: string; uid: string } | undefined;
      const ref = spec.boundObjectRef;
      if (ref !== undefined) {
        const bd = ref.kind === undefined ? undefined : findKind(ref.apiVersion ?? 'v1', ref.kind);
        if (bd === undefined || !['Secret', 'Pod', 'Node'].includes(bd.kind)) {
          throw errors.badRequest(`cannot bind token for object of kind ${String(ref.kind)}`);
        }
        const o = store.get(bd, path.namespace, ref.name ?? '');
        if (o === undefined) throw errors.notFound(bd.group, bd.plural, ref.name ?? '');
        if (ref.uid !== undefined && ref.uid !== '' && ref.uid !== o.metadata.uid) {
          throw new ApiError(
            409,
            'Conflict',
            `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
          );
        }
        bound = { kind: bd.kind, name: ref.name ?? '', uid: o.metadata.uid ?? '' };
      }
      const granted = Math.min(seconds, maxTokenSeconds);
      const { token, expiresAt } = mint(path.namespace, path.name, granted, bound);
      return send(res, 201, {
        kind: 'TokenRequest',
        apiVersion: 'authentication.k8s.io/v1',
        metadata: {
          name: path.name,
          namespace: path.namespace,
          creationTimestamp: timestamp(now()),
        },
        spec: {
          audiences: spec.audiences ?? ['https://kubernetes.default.svc'],
          expirationSeconds: granted,
          ...(ref === undefined ? {} : { boundObjectRef: { ...ref, uid: bound?.uid } }),
        },
        status: { token, expirationTimestamp: timestamp(expiresAt) },
      });
    }
    if (d.plural === 'pods' && ['exec', 'attach', 'portforward'].includes(path.subresource)) {
      throw errors.badRequest('Upgrade request required');
    }
    if (d.plural === 'pods' && path.subresource === 'log') {
      if (store.get(d, path.namespace, path.name) === undefined)
        throw errors.notFound('', 'pods', path.name);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('');
      return;
    }

    switch (verb) {
      case 'get': {
        const o = store.get(d, path.namespace, path.name);
        if (o === undefined) throw errors.notFound(d.group, d.plural, path.name);
        return send(res, 200, path.subresource === 'scale' ? scaleOf(o) : o);
      }
      case 'list':
        return send(res, 200, listOf(d, selected(query, store.list(d, path.namespace))));
      case 'watch':
        return watch(req, res, d, path, query);
      case 'create': {
        if (path.name !== '') throw errors.methodNotAllowed();
        const o = await create(user, d, path, parsed, dryRun);
        return send(res, 201, o);
      }
      case 'update':
      case 'patch': {
        const existing = store.get(d, path.namespace, path.name);
        if (existing === undefined) throw errors.notFound(d.group, d.plural, path.name);
        if (path.subresource === 'scale') {
          let scale = scaleOf(existing) as KObject;
          scale =
            verb === 'patch' ? applyPatch(contentType, scale, body) : toObject(d, parsed, path);
          const replicas = (scale['spec'] as { replicas?: number } | undefined)?.replicas;
          const rv = scale.metadata.resourceVersion;
          const next = { ...existing, spec: { ...(existing['spec'] as object), replicas } };
          next.metadata = {
            ...existing.metadata,
            ...(rv === undefined ? {} : { resourceVersion: rv }),
          };
          return send(res, 200, scaleOf(checkedUpdate(user, d, path, next, '')));
        }
        let next: KObject;
        if (verb === 'patch') {
          next = applyPatch(contentType, existing, body);
          // A patch without a resourceVersion applies to whatever is current.
          const patchRv = (
            isObject(parsed) && isObject(parsed['metadata'])
              ? parsed['metadata']['resourceVersion']
              : undefined
          ) as string | undefined;
          next.metadata.resourceVersion = patchRv ?? existing.metadata.resourceVersion ?? '';
        } else {
          next = toObject(d, parsed, path);
          if (path.subresource === '' && (next.metadata.resourceVersion ?? '') === '') {
            // Unconditional update: allowed for most resources, as on a real server.
            next.metadata.resourceVersion = existing.metadata.resourceVersion ?? '';
          }
        }
        if (dryRun) return send(res, 200, next);
        return send(res, 200, checkedUpdate(user, d, path, next, path.subresource));
      }
      case 'delete': {
        const opts2 = (isObject(parsed) ? parsed : {}) as {
          propagationPolicy?: string;
          preconditions?: { uid?: string; resourceVersion?: string };
        };
        const existing = store.get(d, path.namespace, path.name);
        if (existing === undefined) throw errors.notFound(d.group, d.plural, path.name);
        const pre = opts2.preconditions ?? {};
        if (
          (pre.uid !== undefined && pre.uid !== existing.metadata.uid) ||
          (pre.resourceVersion !== undefined &&
            pre.resourceVersion !== existing.metadata.resourceVersion)
        ) {
          throw errors.conflict(d.group, d.plural, path.name);
        }
        if (dryRun) return send(res, 200, existing);
        const propagation =
          query.get('propagationPolicy') ?? opts2.propagationPolicy ?? 'Background';
        const gone = remove(d, path.namespace, path.name, propagation) ?? existing;
        if (d.group === '' && (d.plural === 'namespaces' || d.plural === 'pods')) {
          gone.metadata.deletionTimestamp ??= timestamp(now());
          if (d.plural === 'namespaces') gone['status'] = { phase: 'Terminating' };
          return send(res, 200, gone);
        }
        return send(res, 200, {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Success',
          details: {
            name: path.name,
            ...(d.group === '' ? {} : { group: d.group }),
            kind: d.plural,
            uid: gone.metadata.uid,
          },
        });
      }
      case 'deletecollection': {
        const items = selected(query, store.list(d, path.namespace));
        if (!dryRun)
          for (const o of items)
            remove(d, o.metadata.namespace ?? '', o.metadata.name ?? '', 'Background');
        return send(res, 200, listOf(d, items));
      }
      default:
        throw errors.methodNotAllowed();
    }
  }

  let seq = 0;
  const server: Server = createServer({ cert: certs.certPem, key: certs.keyPem }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://double');
    const entry: RecordedRequest = {
      seq: ++seq,
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.search.replace(/^\?/, ''),
      user: '',
      status: 0,
    };
    requests.push(entry);
    res.on('finish', () => {
      entry.status = res.statusCode;
    });
    handle(req, res, entry).catch((err: unknown) => {
      const e =
        err instanceof ApiError
          ? err
          : new ApiError(500, 'InternalError', `Internal error occurred: ${String(err)}`);
      entry.status = e.code;
      if (!res.headersSent) send(res, e.code, e.toStatus());
      else res.end();
    });
  });

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'https://double');
    const entry: RecordedRequest = {
      seq: ++seq,
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.search.replace(/^\?/, ''),
      user: '',
      status: 0,
    };
    requests.push(entry);
    const reject = (e: ApiError): void => {
      entry.status = e.code;
      const text = JSON.stringify(e.toStatus());
      socket.end(
        `HTTP/1.1 ${e.code} ${e.reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
      );
    };
    let user: UserInfo | undefined;
    try {
      user = authenticate(req);
    } catch (err) {
      return reject(err instanceof ApiError ? err : errors.unauthorized());
    }
    if (user === undefined) return reject(errors.unauthorized());
    Object.assign(entry, { user: user.username });
    const r = route(url.pathname);
    if (
      r.kind !== 'resource' ||
      r.path.plural !== 'pods' ||
      (r.path.subresource !== 'exec' && r.path.subresource !== 'portforward')
    ) {
      return reject(errors.badRequest('only pods/exec and pods/portforward upgrades are served'));
    }
    const path = r.path;
    const subresource = r.path.subresource;
    // Kubernetes 1.31+ (AuthorizePodWebsocketUpgradeCreatePermission) asks for `create`
    // on pods/exec and pods/portforward for a WebSocket, as for the POST of SPDY.
    const attrs: Attributes = {
      verb: 'create',
      group: '',
      resource: 'pods',
      subresource,
      namespace: path.namespace,
      name: path.name,
    };
    Object.assign(entry, attrs);
    if (!authorize(rbacObjects, user, attrs)) {
      return reject(
        errors.forbidden('', `pods/${subresource}`, path.name, forbiddenWhy(user, attrs)),
      );
    }
    const pod = store.get(def('', 'pods'), path.namespace, path.name);
    if (pod === undefined) return reject(errors.notFound('', 'pods', path.name));
    const phase = (pod['status'] as { phase?: string } | undefined)?.phase;
    if (phase !== 'Running') {
      return reject(errors.badRequest(`pod ${path.name} is not running (phase ${String(phase)})`));
    }
    if (subresource === 'portforward') {
      const ports = forwardPorts(url.searchParams);
      if (ports === undefined) return reject(errors.badRequest('ports must be 1 … 65535'));
      entry.status = 101;
      handlePortForwardUpgrade(req, socket, head, {
        podUid: pod.metadata.uid ?? '',
        ports,
        sessions,
      });
      return;
    }
    const containers = (
      (pod['spec'] as { containers?: { name: string }[] } | undefined)?.containers ?? []
    ).map((c) => c.name);
    const container = url.searchParams.get('container') ?? containers[0] ?? '';
    if (!containers.includes(container)) {
      return reject(errors.badRequest(`container ${container} is not valid for pod ${path.name}`));
    }
    entry.status = 101;
    handleExecUpgrade(req, socket, head, {
      pod,
      container,
      command: url.searchParams.getAll('command'),
      tty: url.searchParams.get('tty') === 'true',
      stdin: url.searchParams.get('stdin') === 'true',
      ...(opts.execRunner === undefined ? {} : { runner: opts.execRunner }),
      protocols: execProtocols,
      sessions,
    });
  });
  const sessions = new Map<() => void, { podUid: string; kill: () => void }>();
  let execProtocols = EXEC_PROTOCOLS;
  // A deleted pod's containers die, and with them the exec and port-forward sessions into it.
  store.changes.on('change', (c: Change) => {
    if (c.type !== 'DELETED' || c.def.kind !== 'Pod') return;
    for (const s of sessions.values()) if (s.podUid === c.object.metadata.uid) s.kill();
  });

  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `https://127.0.0.1:${port}`;

  return {
    url,
    port,
    caPem: certs.caPem,
    certs,
    adminToken,
    requests,
    store,
    calls(user) {
      return requests
        .filter((r) => r.verb !== undefined && (user === undefined || r.user === user))
        .map((r) => {
          const res = `${r.resource ?? ''}${r.subresource ? `/${r.subresource}` : ''}${r.group ? `.${r.group}` : ''}`;
          return `${r.verb ?? ''} ${res} ${r.namespace ?? ''}/${r.name ?? ''} ${r.status}`;
        });
    },
    kubeconfigFor(token, namespace) {
      return JSON.stringify(
        {
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [
            {
              name: 'k8s-double',
              cluster: {
                server: url,
                'certificate-authority-data': Buffer.from(certs.caPem).toString('base64'),
              },
            },
          ],
          users: [{ name: 'user', user: { token } }],
          contexts: [
            {
              name: 'k8s-double',
              context: {
                cluster: 'k8s-double',
                user: 'user',
                ...(namespace === undefined ? {} : { namespace }),
              },
            },
          ],
          'current-context': 'k8s-double',
        },
        null,
        2,
      );
    },
    addToken(token, user) {
      statics.set(token, user);
    },
    advanceClock(seconds) {
      clockOffset += seconds;
    },
    setExecProtocols(protocols) {
      execProtocols = protocols;
    },
    get(apiVersion, kind, namespace, name) {
      const d = findKind(apiVersion, kind);
      if (d === undefined) throw new Error(`unknown kind ${apiVersion} ${kind}`);
      return store.get(d, namespace, name);
    },
    list(apiVersion, kind, namespace = '') {
      const d = findKind(apiVersion, kind);
      if (d === undefined) throw new Error(`unknown kind ${apiVersion} ${kind}`);
      return store.list(d, namespace);
    },
    put(obj) {
      const d = findKind(obj.apiVersion ?? '', obj.kind ?? '');
      if (d === undefined)
        throw new Error(`unknown kind ${String(obj.apiVersion)} ${String(obj.kind)}`);
      const ns = obj.metadata.namespace ?? '';
      const existing = store.get(d, ns, obj.metadata.name ?? '');
      let saved: KObject;
      if (existing === undefined) {
        const o = structuredClone(obj);
        defaults(d, o);
        if (o['status'] === undefined && obj['status'] !== undefined) o['status'] = obj['status'];
        if (obj['status'] !== undefined) o['status'] = obj['status'];
        saved = store.insert(d, o);
      } else {
        saved = store.update(d, {
          ...structuredClone(obj),
          metadata: { ...obj.metadata, resourceVersion: existing.metadata.resourceVersion ?? '' },
        });
      }
      return saved;
    },
    mintToken(namespace, serviceAccount, seconds = 3600, bound) {
      let b: { kind: string; name: string; uid: string } | undefined;
      if (bound !== undefined) {
        const bd = findKind('v1', bound.kind);
        const o = bd === undefined ? undefined : store.get(bd, namespace, bound.name);
        if (o === undefined) throw new Error(`no ${bound.kind} ${namespace}/${bound.name}`);
        b = { ...bound, uid: o.metadata.uid ?? '' };
      }
      return mint(namespace, serviceAccount, Math.min(seconds, maxTokenSeconds), b).token;
    },
    call(method, path, o = {}) {
      return new Promise((resolve, reject) => {
        const text = o.body === undefined ? undefined : JSON.stringify(o.body);
        const req = httpsRequest(
          `${url}${path}`,
          {
            method,
            ca: certs.caPem,
            headers: {
              authorization: `Bearer ${o.token ?? adminToken}`,
              ...(text === undefined
                ? {}
                : {
                    'content-type': o.contentType ?? JSON_TYPE,
                    'content-length': Buffer.byteLength(text),
                  }),
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              const raw = Buffer.concat(chunks).toString('utf8');
              let body: unknown = raw;
              try {
                body = JSON.parse(raw);
              } catch {
                // text (logs, health)
              }
              resolve({ status: res.statusCode ?? 0, body });
            });
          },
        );
        req.on('error', reject);
        req.end(text);
      });
    },
    async stop() {
      for (const t of timers) clearTimeout(t);
      for (const end of [...sessions.keys()]) end();
      for (const res of open) res.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
