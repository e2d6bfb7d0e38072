// Every Kubernetes API call the agent makes in Kubernetes mode (provisioner,
// revocation, reconciliation, health, admission webhook, SSH sessions), as
// RBAC sees it: verb, API group, resource. permissions.test.ts checks each is
// allowed by AGENT_CLUSTER_RULES; the provisioner test against the API double
// checks every call it recorded is in this list.

export interface ApiCall {
  readonly verb: string;
  /** '' is the core group. */
  readonly group: string;
  /** `pods/exec` style for subresources. */
  readonly resource: string;
}

const each = (group: string, resource: string, verbs: readonly string[]): ApiCall[] =>
  verbs.map((verb) => ({ verb, group, resource }));

export const PROVISIONER_CALLS: readonly ApiCall[] = [
  // The lease namespace: made, annotated when provisioned, listed by label, deleted.
  ...each('', 'namespaces', ['get', 'list', 'create', 'update', 'delete']),
  // Labels and taints of the lease's nodes; health from Node status.
  ...each('', 'nodes', ['get', 'list', 'update']),
  // Guard rails: get-then-create-or-update; the quota is set to pods: 0 at revocation.
  ...each('', 'resourcequotas', ['get', 'create', 'update']),
  ...each('', 'limitranges', ['get', 'create', 'update']),
  ...each('networking.k8s.io', 'networkpolicies', ['get', 'create', 'update']),
  // Access: made, and deleted first at revocation.
  ...each('', 'serviceaccounts', ['get', 'create', 'update', 'delete']),
  ...each('', 'serviceaccounts/token', ['create']),
  ...each('', 'secrets', ['get', 'create', 'update', 'delete']),
  ...each('rbac.authorization.k8s.io', 'roles', ['get', 'create', 'update']),
  ...each('rbac.authorization.k8s.io', 'rolebindings', ['get', 'create', 'update', 'delete']),
  // Workspaces, and every controller and pod of the namespace at revocation.
  ...each('apps', 'deployments', ['get', 'create', 'list', 'delete']),
  ...each('apps', 'statefulsets', ['list', 'delete']),
  ...each('apps', 'replicasets', ['list', 'delete']),
  ...each('apps', 'daemonsets', ['list', 'delete']),
  ...each('batch', 'jobs', ['list', 'delete']),
  ...each('batch', 'cronjobs', ['list', 'delete']),
  ...each('', 'pods', ['list', 'delete']),
  // SSH sessions (the WebSocket upgrade is a GET; API servers ≥ 1.30 also check create).
  ...each('', 'pods/exec', ['get', 'create']),
  // ssh -L: a port-forward into the workspace pod (the same upgrade).
  ...each('', 'pods/portforward', ['get', 'create']),
];
