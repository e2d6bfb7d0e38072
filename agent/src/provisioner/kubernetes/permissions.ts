// RBAC of the Kubernetes provisioner (D28, D30): what a lease's own Role
// grants its buyer inside the lease's namespace, and what the agent's own
// ClusterRole (deploy/agent) must hold. Kubernetes refuses to create a Role
// or RoleBinding granting a permission its creator does not hold (RBAC's
// escalation check) unless the creator has `escalate` / `bind`; the agent
// holds every permission it grants instead, so its power is bounded by this
// list and nothing else. The manifests' ClusterRole is checked against
// AGENT_CLUSTER_RULES, and the Kubernetes API double of the tests records
// every call the provisioner makes so a test can check each is covered and
// every rule is used or granted ("exactly the verbs it uses").

export interface PolicyRule {
  /** '' is the core group. */
  readonly apiGroups: readonly string[];
  /** Plural resource names; `pods/exec` style for subresources. */
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
}

/** Every verb on a namespaced resource a tenant works with. */
export const ALL_VERBS = [
  'get',
  'list',
  'watch',
  'create',
  'update',
  'patch',
  'delete',
  'deletecollection',
] as const;

/**
 * The lease's Role in its namespace: workloads, services, config, secrets,
 * volumes, exec, logs and port-forward; nothing cluster-wide (no nodes, no
 * namespaces, no RBAC, no quota or network policy of its own).
 */
export const LEASE_ROLE_RULES: readonly PolicyRule[] = [
  {
    apiGroups: [''],
    resources: ['pods', 'services', 'configmaps', 'secrets', 'persistentvolumeclaims'],
    verbs: ALL_VERBS,
  },
  { apiGroups: [''], resources: ['pods/log'], verbs: ['get', 'list', 'watch'] },
  {
    apiGroups: [''],
    resources: ['pods/exec', 'pods/portforward', 'pods/attach'],
    verbs: ['get', 'create'],
  },
  { apiGroups: [''], resources: ['endpoints', 'events'], verbs: ['get', 'list', 'watch'] },
  {
    apiGroups: ['apps'],
    resources: [
      'deployments',
      'deployments/scale',
      'replicasets',
      'statefulsets',
      'statefulsets/scale',
      'daemonsets',
    ],
    verbs: ALL_VERBS,
  },
  { apiGroups: ['batch'], resources: ['jobs', 'cronjobs'], verbs: ALL_VERBS },
  { apiGroups: ['autoscaling'], resources: ['horizontalpodautoscalers'], verbs: ALL_VERBS },
];

/**
 * What the provisioner itself calls, beyond what it grants: the lease's
 * namespace and its guard rails (quota, limits, network policy), the
 * access objects (service account, its token, the anchor secret, role and
 * binding), the workspace controllers and pods (SSH sessions exec into
 * them), and the nodes (health, and the lease's labels and taints).
 */
export const PROVISIONER_RULES: readonly PolicyRule[] = [
  // Exactly the verbs the agent calls (kubernetes/calls.ts, checked by the
  // provisioner's test against the API double): get-then-create-or-update,
  // list by label, delete at revocation.
  {
    apiGroups: [''],
    resources: ['namespaces'],
    verbs: ['get', 'list', 'create', 'update', 'delete'],
  },
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'update'] },
  {
    apiGroups: [''],
    resources: ['resourcequotas', 'limitranges'],
    verbs: ['get', 'create', 'update'],
  },
  { apiGroups: [''], resources: ['serviceaccounts'], verbs: ['get', 'create', 'update', 'delete'] },
  { apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'] },
  {
    apiGroups: ['networking.k8s.io'],
    resources: ['networkpolicies'],
    verbs: ['get', 'create', 'update'],
  },
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['roles'],
    verbs: ['get', 'create', 'update'],
  },
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['rolebindings'],
    verbs: ['get', 'create', 'update', 'delete'],
  },
];

/** The agent's ClusterRole: what it calls, and everything it grants (see the top of this file). */
export const AGENT_CLUSTER_RULES: readonly PolicyRule[] = [
  ...PROVISIONER_RULES,
  ...LEASE_ROLE_RULES,
];

/** Does `rules` allow `verb` on `group`/`resource` (subresource as `pods/exec`)? */
export function allows(
  rules: readonly PolicyRule[],
  verb: string,
  group: string,
  resource: string,
): boolean {
  return rules.some(
    (r) =>
      (r.apiGroups.includes(group) || r.apiGroups.includes('*')) &&
      (r.resources.includes(resource) || r.resources.includes('*')) &&
      (r.verbs.includes(verb) || r.verbs.includes('*')),
  );
}

/** Rules as an object of the API holds them (mutable copies). */
export type RuleObject = { apiGroups: string[]; resources: string[]; verbs: string[] };

export function ruleObjects(rules: readonly PolicyRule[]): RuleObject[] {
  return rules.map((r) => ({
    apiGroups: [...r.apiGroups],
    resources: [...r.resources],
    verbs: [...r.verbs],
  }));
}

export const AGENT_CLUSTER_ROLE_NAME = 'gpux-agent';

/**
 * The agent's ClusterRole object: what deploy/agent/cluster-role.yaml holds
 * (`npm run gen` writes that file from this), and what the tests install in
 * the Kubernetes API double.
 */
export function agentClusterRole(): {
  apiVersion: 'rbac.authorization.k8s.io/v1';
  kind: 'ClusterRole';
  metadata: { name: string };
  rules: RuleObject[];
} {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: AGENT_CLUSTER_ROLE_NAME },
    rules: ruleObjects(AGENT_CLUSTER_RULES),
  };
}
