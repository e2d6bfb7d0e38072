// The three patch types a Kubernetes API server takes on PATCH: JSON merge
// patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch (a merge
// patch whose lists of objects merge by a key such as `name`, with `$patch`
// directives). The strategic merge keys are those of the core types' fields
// the provisioner and kubectl touch, looked up by field name.

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

export class PatchError extends Error {}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const clone = <T>(v: T): T => structuredClone(v);

export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k] ?? null, v);
  }
  return out;
}

/** Merge keys of lists of objects (patchMergeKey in the Kubernetes types), by field name. */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  ports: 'containerPort',
  imagePullSecrets: 'name',
  conditions: 'type',
  ownerReferences: 'uid',
  hostAliases: 'ip',
  topologySpreadConstraints: 'topologyKey',
  resourceClaims: 'name',
  addresses: 'type',
};
/** Lists of scalars that merge (patchStrategy: merge) rather than being replaced. */
const MERGED_SCALAR_LISTS = new Set(['finalizers']);

function strategicList(field: string, target: Json[], patch: Json[]): Json[] {
  const key = MERGE_KEYS[field];
  if (key === undefined) {
    if (MERGED_SCALAR_LISTS.has(field)) {
      const out = [...target];
      for (const v of patch) if (!out.includes(v)) out.push(v);
      return out;
    }
    return clone(patch);
  }
  if (patch.some((p) => isObject(p) && p['$patch'] === 'replace')) {
    return clone(patch.filter((p) => !(isObject(p) && p['$patch'] === 'replace')));
  }
  const out = [...target];
  for (const p of patch) {
    if (!isObject(p)) throw new PatchError(`${field}: a list item is not an object`);
    const id = p[key];
    const at = out.findIndex((t) => isObject(t) && t[key] === id);
    if (p['$patch'] === 'delete') {
      if (at >= 0) out.splice(at, 1);
    } else if (at >= 0) {
      out[at] = strategicMergePatch(out[at] ?? null, p);
    } else {
      out.push(strategicMergePatch(null, p));
    }
  }
  return out;
}

export function strategicMergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  if (patch['$patch'] === 'replace') {
    const rest = { ...patch };
    delete rest['$patch'];
    return clone(rest);
  }
  if (patch['$patch'] === 'delete') return null;
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys') continue;
    if (k.startsWith('$setElementOrder/')) continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const cur = out[field];
      if (Array.isArray(cur) && Array.isArray(v)) out[field] = cur.filter((x) => !v.includes(x));
      continue;
    }
    if (v === null) delete out[k];
    else if (Array.isArray(v)) {
      const cur = out[k];
      out[k] = strategicList(k, Array.isArray(cur) ? cur : [], v);
    } else out[k] = strategicMergePatch(out[k] ?? null, v);
  }
  return out;
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw new PatchError(`bad JSON pointer ${path}`);
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parentOf(doc: Json, path: string[]): { parent: Json; key: string } {
  let cur: Json = doc;
  for (const seg of path.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(seg)] ?? null;
    else if (isObject(cur)) cur = cur[seg] ?? null;
    else throw new PatchError(`path ${path.join('/')} does not exist`);
  }
  const key = path[path.length - 1];
  if (key === undefined) throw new PatchError('the root cannot be patched');
  if (!Array.isArray(cur) && !isObject(cur)) {
    throw new PatchError(`path /${path.join('/')} does not exist`);
  }
  return { parent: cur, key };
}

function getAt(doc: Json, path: string[]): Json | undefined {
  let cur: Json | undefined = doc;
  for (const seg of path) {
    if (Array.isArray(cur)) cur = cur[Number(seg)];
    else if (isObject(cur)) cur = cur[seg];
    else return undefined;
  }
  return cur;
}

function removeAt(doc: Json, path: string[]): Json {
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) {
    const i = Number(key);
    if (!(i >= 0 && i < parent.length)) throw new PatchError(`no index ${key}`);
    return parent.splice(i, 1)[0] ?? null;
  }
  const obj = parent as JsonObject;
  if (!(key in obj)) throw new PatchError(`unable to remove nonexistent key: ${key}`);
  const v = obj[key] ?? null;
  delete obj[key];
  return v;
}

function addAt(doc: Json, path: string[], value: Json, replace: boolean): void {
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) {
    const i = key === '-' ? parent.length : Number(key);
    if (!(i >= 0 && i <= parent.length)) throw new PatchError(`no index ${key}`);
    if (replace) parent[i] = value;
    else parent.splice(i, 0, value);
  } else {
    const obj = parent as JsonObject;
    if (replace && !(key in obj)) throw new PatchError(`replace of a missing key: ${key}`);
    obj[key] = value;
  }
}

export function jsonPatch(target: Json, ops: Json): Json {
  if (!Array.isArray(ops)) throw new PatchError('a JSON patch is a list of operations');
  let doc = clone(target);
  for (const op of ops) {
    if (!isObject(op) || typeof op['op'] !== 'string' || typeof op['path'] !== 'string') {
      throw new PatchError('bad JSON patch operation');
    }
    const path = pointer(op['path']);
    const value = op['value'] ?? null;
    switch (op['op']) {
      case 'add':
        if (path.length === 0) doc = clone(value);
        else addAt(doc, path, clone(value), false);
        break;
      case 'replace':
        if (path.length === 0) doc = clone(value);
        else addAt(doc, path, clone(value), true);
        break;
      case 'remove':
        removeAt(doc, path);
        break;
      case 'test':
        if (JSON.stringify(getAt(doc, path)) !== JSON.stringify(value)) {
          throw new PatchError(`test failed at ${op['path']}`);
        }
        break;
      case 'move':
      case 'copy': {
        if (typeof op['from'] !== 'string') throw new PatchError('move/copy without from');
        const from = pointer(op['from']);
        const v = op['op'] === 'move' ? removeAt(doc, from) : clone(getAt(doc, from) ?? null);
        addAt(doc, path, v, false);
        break;
      }
      default:
        throw new PatchError(`unknown JSON patch op ${String(op['op'])}`);
    }
  }
  return doc;
}
