// The scale subresource of Deployments, StatefulSets and ReplicaSets: an
// autoscaling/v1 Scale read from the workload, and written back into its
// spec.replicas (update or patch, with the Scale's resourceVersion as the
// precondition). Other verbs on it act on the workload, as generic CRUD.

import type { Double, ResourceHandler, ResourceRequest } from './context.js';
import { applyPatch, checkedUpdate, serveCrud, toObject } from './crud.js';
import { errors } from './status.js';
import type { KObject } from './store.js';
import { send } from './wire.js';

function scaleOf(o: KObject): KObject {
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
    } as KObject['metadata'],
    spec: { replicas: spec.replicas ?? 1 },
    status: {
      replicas: status.replicas ?? 0,
      selector: Object.entries(spec.selector?.matchLabels ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
    },
  };
}

function serveScale(ctx: Double, r: ResourceRequest): void | Promise<void> {
  const { def: d, path, res } = r;
  if (r.verb !== 'get' && r.verb !== 'update' && r.verb !== 'patch') return serveCrud(ctx, r);
  const existing = ctx.store.get(d, path.namespace, path.name);
  if (existing === undefined) throw errors.notFound(d.group, d.plural, path.name);
  if (r.verb === 'get') return send(res, 200, scaleOf(existing));
  const scale =
    r.verb === 'patch'
      ? applyPatch(r.contentType, scaleOf(existing), r.body)
      : toObject(d, r.parsed, path.namespace);
  const replicas = (scale['spec'] as { replicas?: number } | undefined)?.replicas;
  const rv = scale.metadata.resourceVersion;
  const next = { ...existing, spec: { ...(existing['spec'] as object), replicas } };
  next.metadata = {
    ...existing.metadata,
    ...(rv === undefined ? {} : { resourceVersion: rv }),
  };
  return send(res, 200, scaleOf(checkedUpdate(ctx, r.user, d, path, next, '')));
}

export const scale: ResourceHandler = { serve: serveScale };
