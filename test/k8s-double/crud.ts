// Generic CRUD on the store, for every resource kind: create (409
// AlreadyExists, generateName, admission), get, list and watch with label and
// field selectors, update with the resourceVersion and uid preconditions,
// the three patch types, delete with preconditions and owner-reference
// cascade, deletecollection, the status subresource and dryRun. What a kind
// does differently comes from its entry in dispatch.ts (ctx.kind).

import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

import { admitCreate, checkEscalation, requireNamespace } from './admission.js';
import type { Double, Remove, ResourceRequest } from './context.js';
import { jsonPatch, mergePatch, PatchError, strategicMergePatch } from './patch.js';
import type { Json } from './patch.js';
import type { UserInfo } from './rbac.js';
import { groupVersion } from './resources.js';
import type { ResourceDef } from './resources.js';
import type { ResourcePath } from './route.js';
import { ApiError, errors, qualified } from './status.js';
import { matchesFields, matchesLabels, parseLabelSelector } from './store.js';
import type { Change, KObject } from './store.js';
import { isObject, JSON_TYPE, parseJson, send } from './wire.js';

/** A request body as an object of `d` in `namespace` (kind and namespace checked). */
export function toObject(d: ResourceDef, raw: unknown, namespace: string): KObject {
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
    if (ns !== undefined && ns !== '' && ns !== namespace) {
      throw errors.badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    }
    obj.metadata.namespace = namespace;
  }
  return obj;
}

export async function create(
  ctx: Double,
  user: UserInfo,
  d: ResourceDef,
  namespace: string,
  raw: unknown,
  dryRun: boolean,
): Promise<KObject> {
  const obj = toObject(d, raw, namespace);
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
  if (d.namespaced) requireNamespace(ctx, namespace);
  if (ctx.store.get(d, namespace, name) !== undefined) {
    throw errors.alreadyExists(d.group, d.plural, name);
  }
  const admitted = await admitCreate(ctx, user, d, obj, namespace);
  if (dryRun) return admitted;
  return ctx.store.insert(d, admitted);
}

/** Stores `next` over the object at `path` after the update preconditions; `sub` 'status' writes only the status. */
export function checkedUpdate(
  ctx: Double,
  user: UserInfo,
  d: ResourceDef,
  path: ResourcePath,
  next: KObject,
  sub: string,
): KObject {
  const existing = ctx.store.get(d, path.namespace, path.name);
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
  checkEscalation(ctx, user, d, next, path.namespace);
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
  return ctx.store.update(d, merged);
}

/** `target` patched by `body`, by the patch type its content type names. */
export function applyPatch(contentType: string, target: KObject, body: Buffer): KObject {
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

/** Deletes one object as its kind deletes (ctx.kind(d).remove), else as removeObject does. */
export const remove: Remove = (ctx, d, namespace, name, propagation) =>
  (ctx.kind(d).remove ?? removeObject)(ctx, d, namespace, name, propagation);

/** Drops the object from the store and, unless `Orphan`, its dependents (the garbage collector). */
const removeObject: Remove = (ctx, d, namespace, name, propagation) => {
  const gone = ctx.store.remove(d, namespace, name);
  if (gone === undefined) return undefined;
  if (propagation !== 'Orphan' && gone.metadata.uid !== undefined) {
    for (const { def: od, object } of ctx.store.inNamespace(namespace)) {
      if ((object.metadata.ownerReferences ?? []).some((r) => r.uid === gone.metadata.uid)) {
        remove(ctx, od, namespace, object.metadata.name ?? '', propagation);
      }
    }
  }
  return gone;
};

function listOf(ctx: Double, d: ResourceDef, items: KObject[]): object {
  return {
    kind: `${d.kind}List`,
    apiVersion: groupVersion(d),
    metadata: { resourceVersion: ctx.store.resourceVersion },
    items: items.map((o) => {
      const { apiVersion: _a, kind: _k, ...rest } = o;
      return rest;
    }),
  };
}

/** The objects matching the query's labelSelector and fieldSelector. */
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

/** A watch: newline-delimited events (ADDED for what exists first, unless from a resourceVersion). */
function watch(
  ctx: Double,
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
    for (const o of ctx.store.list(d, path.namespace)) if (matches(o)) write('ADDED', o);
  }
  const listener = (c: Change): void => {
    if (c.def !== d || !matches(c.object)) return;
    write(c.type, c.object);
  };
  ctx.store.changes.on('change', listener);
  const timeout = Number(query.get('timeoutSeconds') ?? '1800');
  const timer = setTimeout(() => res.end(), timeout * 1000);
  const done = (): void => {
    clearTimeout(timer);
    ctx.store.changes.off('change', listener);
  };
  res.on('close', done);
  req.on('close', done);
  ctx.watches.add(res);
  res.on('close', () => ctx.watches.delete(res));
}

function update(ctx: Double, r: ResourceRequest): void {
  const { def: d, path, res } = r;
  const existing = ctx.store.get(d, path.namespace, path.name);
  if (existing === undefined) throw errors.notFound(d.group, d.plural, path.name);
  let next: KObject;
  if (r.verb === 'patch') {
    next = applyPatch(r.contentType, existing, r.body);
    // A patch without a resourceVersion applies to whatever is current.
    const patchRv = (
      isObject(r.parsed) && isObject(r.parsed['metadata'])
        ? r.parsed['metadata']['resourceVersion']
        : undefined
    ) as string | undefined;
    next.metadata.resourceVersion = patchRv ?? existing.metadata.resourceVersion ?? '';
  } else {
    next = toObject(d, r.parsed, path.namespace);
    if (path.subresource === '' && (next.metadata.resourceVersion ?? '') === '') {
      // Unconditional update: allowed for most resources, as on a real server.
      next.metadata.resourceVersion = existing.metadata.resourceVersion ?? '';
    }
  }
  if (r.dryRun) return send(res, 200, next);
  return send(res, 200, checkedUpdate(ctx, r.user, d, path, next, path.subresource));
}

function del(ctx: Double, r: ResourceRequest): void {
  const { def: d, path, res } = r;
  const opts = (isObject(r.parsed) ? r.parsed : {}) as {
    propagationPolicy?: string;
    preconditions?: { uid?: string; resourceVersion?: string };
  };
  const existing = ctx.store.get(d, path.namespace, path.name);
  if (existing === undefined) throw errors.notFound(d.group, d.plural, path.name);
  const pre = opts.preconditions ?? {};
  if (
    (pre.uid !== undefined && pre.uid !== existing.metadata.uid) ||
    (pre.resourceVersion !== undefined && pre.resourceVersion !== existing.metadata.resourceVersion)
  ) {
    throw errors.conflict(d.group, d.plural, path.name);
  }
  if (r.dryRun) return send(res, 200, existing);
  const propagation = r.query.get('propagationPolicy') ?? opts.propagationPolicy ?? 'Background';
  const gone = remove(ctx, d, path.namespace, path.name, propagation) ?? existing;
  const deleted = ctx.kind(d).deleted;
  if (deleted !== undefined) return send(res, 200, deleted(ctx, gone));
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

/** Generic CRUD: the request by its verb. */
export async function serveCrud(ctx: Double, r: ResourceRequest): Promise<void> {
  const { def: d, path, res, query } = r;
  switch (r.verb) {
    case 'get': {
      const o = ctx.store.get(d, path.namespace, path.name);
      if (o === undefined) throw errors.notFound(d.group, d.plural, path.name);
      return send(res, 200, o);
    }
    case 'list':
      return send(res, 200, listOf(ctx, d, selected(query, ctx.store.list(d, path.namespace))));
    case 'watch':
      return watch(ctx, r.req, res, d, path, query);
    case 'create': {
      if (path.name !== '') throw errors.methodNotAllowed();
      const o = await create(ctx, r.user, d, path.namespace, r.parsed, r.dryRun);
      return send(res, 201, o);
    }
    case 'update':
    case 'patch':
      return update(ctx, r);
    case 'delete':
      return del(ctx, r);
    case 'deletecollection': {
      const items = selected(query, ctx.store.list(d, path.namespace));
      if (!r.dryRun)
        for (const o of items)
          remove(ctx, d, o.metadata.namespace ?? '', o.metadata.name ?? '', 'Background');
      return send(res, 200, listOf(ctx, d, items));
    }
    default:
      throw errors.methodNotAllowed();
  }
}
