// RBAC as the Kubernetes API server evaluates it (rbac.authorization.k8s.io/v1):
// a request is allowed when a rule of a Role bound in its namespace, or of a
// ClusterRole bound in the namespace or cluster-wide, matches it; creating a
// Role or RoleBinding is refused unless its creator holds every permission it
// grants, or may `escalate` (roles) / `bind` (bindings) (the escalation check).

export interface UserInfo {
  readonly username: string;
  readonly uid?: string;
  readonly groups: readonly string[];
}

export interface PolicyRule {
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly verbs: readonly string[];
  readonly resourceNames?: readonly string[];
  readonly nonResourceURLs?: readonly string[];
}

export interface Subject {
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
}

export interface RoleRef {
  readonly apiGroup?: string;
  readonly kind: string;
  readonly name: string;
}

/** What is asked: a resource request or a non-resource URL. */
export interface Attributes {
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
  readonly subresource: string;
  readonly namespace: string;
  readonly name: string;
  /** Set for non-resource requests (/version, /api…). */
  readonly path?: string;
}

export interface RbacObjects {
  /** Roles of `namespace` by name. */
  role(namespace: string, name: string): { rules?: PolicyRule[] } | undefined;
  clusterRole(name: string): { rules?: PolicyRule[] } | undefined;
  roleBindings(namespace: string): { subjects?: Subject[]; roleRef: RoleRef }[];
  clusterRoleBindings(): { subjects?: Subject[]; roleRef: RoleRef }[];
}

export const MASTERS = 'system:masters';

function has(list: readonly string[] | undefined, value: string): boolean {
  return list !== undefined && (list.includes('*') || list.includes(value));
}

function subjectMatches(s: Subject, user: UserInfo, bindingNamespace: string): boolean {
  switch (s.kind) {
    case 'User':
      return s.name === user.username;
    case 'Group':
      return user.groups.includes(s.name);
    case 'ServiceAccount':
      return user.username === `system:serviceaccount:${s.namespace ?? bindingNamespace}:${s.name}`;
    default:
      return false;
  }
}

/** Every rule that applies to `user` in `namespace` ('' = cluster scope only). */
export function rulesFor(objects: RbacObjects, user: UserInfo, namespace: string): PolicyRule[] {
  const rules: PolicyRule[] = [];
  for (const b of objects.clusterRoleBindings()) {
    if (!(b.subjects ?? []).some((s) => subjectMatches(s, user, ''))) continue;
    if (b.roleRef.kind !== 'ClusterRole') continue;
    rules.push(...(objects.clusterRole(b.roleRef.name)?.rules ?? []));
  }
  if (namespace !== '') {
    for (const b of objects.roleBindings(namespace)) {
      if (!(b.subjects ?? []).some((s) => subjectMatches(s, user, namespace))) continue;
      const role =
        b.roleRef.kind === 'Role'
          ? objects.role(namespace, b.roleRef.name)
          : b.roleRef.kind === 'ClusterRole'
            ? objects.clusterRole(b.roleRef.name)
            : undefined;
      rules.push(...(role?.rules ?? []));
    }
  }
  return rules;
}

function resourceMatches(rule: PolicyRule, resource: string, subresource: string): boolean {
  const wanted = subresource === '' ? resource : `${resource}/${subresource}`;
  for (const r of rule.resources ?? []) {
    if (r === '*' || r === wanted) return true;
    if (subresource !== '' && (r === `*/${subresource}` || r === `${resource}/*`)) return true;
  }
  return false;
}

function urlMatches(rule: PolicyRule, path: string): boolean {
  return (rule.nonResourceURLs ?? []).some(
    (u) => u === '*' || u === path || (u.endsWith('*') && path.startsWith(u.slice(0, -1))),
  );
}

export function ruleAllows(rule: PolicyRule, a: Attributes): boolean {
  if (!has(rule.verbs, a.verb)) return false;
  if (a.path !== undefined) return urlMatches(rule, a.path);
  if (!has(rule.apiGroups, a.group)) return false;
  if (!resourceMatches(rule, a.resource, a.subresource)) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || (a.name !== '' && names.includes(a.name));
}

/** Paths every authenticated user may GET (system:discovery, system:public-info-viewer). */
const DISCOVERY = ['/api', '/apis', '/version', '/openapi', '/healthz', '/livez', '/readyz'];

export function authorize(objects: RbacObjects, user: UserInfo, a: Attributes): boolean {
  if (user.groups.includes(MASTERS)) return true;
  if (a.path !== undefined) {
    if (
      a.verb === 'get' &&
      DISCOVERY.some((p) => a.path === p || a.path?.startsWith(`${p}/`) === true)
    ) {
      return true;
    }
  } else if (
    // system:basic-user: every authenticated user may ask what it may do.
    a.verb === 'create' &&
    ((a.group === 'authorization.k8s.io' &&
      (a.resource === 'selfsubjectaccessreviews' || a.resource === 'selfsubjectrulesreviews')) ||
      (a.group === 'authentication.k8s.io' && a.resource === 'selfsubjectreviews'))
  ) {
    return true;
  }
  return rulesFor(objects, user, a.namespace).some((rule) => ruleAllows(rule, a));
}

/** One permission a rule grants: a verb on a group/resource (or URL), maybe one name. */
interface Atom {
  verb: string;
  group?: string;
  resource?: string;
  name?: string;
  url?: string;
}

function atoms(rule: PolicyRule): Atom[] {
  const out: Atom[] = [];
  for (const verb of rule.verbs) {
    for (const url of rule.nonResourceURLs ?? []) out.push({ verb, url });
    for (const group of rule.apiGroups ?? []) {
      for (const resource of rule.resources ?? []) {
        const names = rule.resourceNames ?? [];
        if (names.length === 0) out.push({ verb, group, resource });
        for (const name of names) out.push({ verb, group, resource, name });
      }
    }
  }
  return out;
}

function ownerCovers(owner: PolicyRule, atom: Atom): boolean {
  if (!has(owner.verbs, atom.verb)) return false;
  if (atom.url !== undefined) {
    return (owner.nonResourceURLs ?? []).some(
      (u) =>
        u === '*' || u === atom.url || (u.endsWith('*') && atom.url?.startsWith(u.slice(0, -1))),
    );
  }
  if (!has(owner.apiGroups, atom.group ?? '')) return false;
  const res = atom.resource ?? '';
  const [base, sub] = res.split('/', 2);
  const resOk = (owner.resources ?? []).some(
    (r) =>
      r === '*' ||
      r === res ||
      (sub !== undefined && (r === `${base}/*` || r === `*/${sub}`)) ||
      (res === '*/*' && r === '*'),
  );
  if (!resOk) return false;
  const names = owner.resourceNames ?? [];
  return names.length === 0 || (atom.name !== undefined && names.includes(atom.name));
}

/** The permissions of `rules` that `owner` does not hold (empty: no escalation). */
export function uncovered(owner: readonly PolicyRule[], rules: readonly PolicyRule[]): string[] {
  const missing: string[] = [];
  for (const rule of rules) {
    for (const atom of atoms(rule)) {
      if (owner.some((o) => ownerCovers(o, atom))) continue;
      missing.push(
        atom.url !== undefined
          ? `{NonResourceURLs:[${atom.url}], Verbs:[${atom.verb}]}`
          : `{APIGroups:[${JSON.stringify(atom.group)}], Resources:[${JSON.stringify(atom.resource)}]${
              atom.name === undefined ? '' : `, ResourceNames:[${JSON.stringify(atom.name)}]`
            }, Verbs:[${JSON.stringify(atom.verb)}]}`,
      );
    }
  }
  return missing;
}
