// Admission, as the API server runs it on a write before it stores: the
// registries' defaults, the namespace that must exist and not be
// terminating, RBAC's escalation check on Roles and bindings, the mutating
// webhooks on pods, and ResourceQuota on pods and services.

import { randomBytes } from 'node:crypto';

import type { Double } from './context.js';
import { formatQuantity, parseQuantity } from './quantity.js';
import { MASTERS, uncovered } from './rbac.js';
import type { PolicyRule, RoleRef, UserInfo } from './rbac.js';
import { resource } from './resources.js';
import type { ResourceDef } from './resources.js';
import { ApiError, errors } from './status.js';
import type { KObject } from './store.js';
import { callMutatingWebhooks } from './webhooks.js';
import { isObject } from './wire.js';

/** New content goes only into a namespace that exists and is not terminating. */
export function requireNamespace(ctx: Double, ns: string): void {
  const n = ctx.store.get(resource('', 'namespaces'), '', ns);
  if (n === undefined) throw errors.notFound('', 'namespaces', ns);
  if (n.metadata.deletionTimestamp !== undefined) {
    throw new ApiError(
      403,
      'Forbidden',
      `unable to create new content in namespace ${ns} because it is being terminated`,
    );
  }
}

/** Type-specific defaults on create, as the real registries fill them. */
export function defaults(d: ResourceDef, obj: KObject): void {
  if (d.group !== '') return;
  const spec = isObject(obj['spec']) ? obj['spec'] : {};
  switch (d.plural) {
    case 'namespaces':
      obj.metadata.labels = {
        ...(obj.metadata.labels ?? {}),
        'kubernetes.io/metadata.name': obj.metadata.name ?? '',
      };
      obj['spec'] = { finalizers: ['kubernetes'], ...spec };
      obj['status'] = { phase: 'Active' };
      break;
    case 'pods':
      obj['spec'] = { restartPolicy: 'Always', dnsPolicy: 'ClusterFirst', ...spec };
      obj['status'] = { phase: 'Pending', qosClass: 'BestEffort' };
      break;
    case 'services':
      obj['spec'] = {
        type: 'ClusterIP',
        clusterIP: `10.96.${randomBytes(1)[0] ?? 0}.${((randomBytes(1)[0] ?? 0) % 250) + 2}`,
        ...spec,
      };
      break;
    case 'secrets':
      obj['type'] ??= 'Opaque';
      break;
    case 'resourcequotas':
      obj['status'] = { hard: (spec['hard'] as object | undefined) ?? {}, used: {} };
      break;
  }
}

/** RBAC's escalation check on a Role/ClusterRole or a binding written by `user`. */
export function checkEscalation(
  ctx: Double,
  user: UserInfo,
  d: ResourceDef,
  obj: KObject,
  namespace: string,
): void {
  if (user.groups.includes(MASTERS)) return;
  const name = obj.metadata.name ?? '';
  const may = (verb: string, plural: string, resName: string): boolean =>
    ctx.auth.allows(user, {
      verb,
      group: 'rbac.authorization.k8s.io',
      resource: plural,
      subresource: '',
      namespace,
      name: resName,
    });
  let granted: readonly PolicyRule[];
  if (d.plural === 'roles' || d.plural === 'clusterroles') {
    if (may('escalate', d.plural, name)) return;
    granted = (obj['rules'] as PolicyRule[] | undefined) ?? [];
  } else if (d.plural === 'rolebindings' || d.plural === 'clusterrolebindings') {
    const ref = obj['roleRef'] as RoleRef | undefined;
    if (ref === undefined) throw errors.invalid(d.kind, d.group, name, 'roleRef: Required value');
    const refPlural = ref.kind === 'ClusterRole' ? 'clusterroles' : 'roles';
    if (may('bind', refPlural, ref.name)) return;
    const role =
      ref.kind === 'ClusterRole'
        ? ctx.auth.rbac.clusterRole(ref.name)
        : ctx.auth.rbac.role(namespace, ref.name);
    if (role === undefined) {
      throw errors.notFound('rbac.authorization.k8s.io', refPlural, ref.name);
    }
    granted = role.rules ?? [];
  } else return;
  const missing = uncovered(ctx.auth.rules(user, namespace), granted);
  if (missing.length > 0) {
    throw errors.forbidden(
      d.group,
      d.plural,
      name,
      `user "${user.username}" (groups=[${user.groups.map((g) => JSON.stringify(g)).join(' ')}]) is attempting to grant RBAC permissions not currently held:\n${missing.join('\n')}`,
    );
  }
}

/** What pods or services use of a quota's resources (`pods`, `count/…`, `requests.…`, …). */
function usage(d: ResourceDef, items: KObject[]): Record<string, number> {
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
            if (kind === 'requests' && (rn === 'cpu' || rn === 'memory')) add(rn, parseQuantity(q));
          }
        }
      }
    }
  }
  return u;
}

/** ResourceQuota admission for a new pod or service in `namespace`. */
export function checkQuota(ctx: Double, d: ResourceDef, obj: KObject, namespace: string): void {
  if (d.group !== '' || (d.plural !== 'pods' && d.plural !== 'services')) return;
  for (const quota of ctx.store.list(resource('', 'resourcequotas'), namespace)) {
    const hard = (quota['spec'] as { hard?: Record<string, unknown> } | undefined)?.hard ?? {};
    const used = usage(d, ctx.store.list(d, namespace));
    const requested = usage(d, [obj]);
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

/**
 * A new object through admission, after the namespace and name checks:
 * the escalation check, the defaults, the mutating webhooks (pods) and quota.
 * What would be stored.
 */
export async function admitCreate(
  ctx: Double,
  user: UserInfo,
  d: ResourceDef,
  obj: KObject,
  namespace: string,
): Promise<KObject> {
  checkEscalation(ctx, user, d, obj, namespace);
  defaults(d, obj);
  delete obj.metadata.resourceVersion;
  let admitted = obj;
  if (d.group === '' && d.plural === 'pods') {
    admitted = await callMutatingWebhooks(
      {
        store: ctx.store,
        certs: ctx.certs,
        serviceUrl: ctx.opts.serviceUrl,
        nsDef: resource('', 'namespaces'),
      },
      d,
      obj,
      user,
      'CREATE',
    );
  }
  checkQuota(ctx, d, admitted, namespace);
  return admitted;
}
