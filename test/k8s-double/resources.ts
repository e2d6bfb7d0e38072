// The API resources the Kubernetes API double serves, and its discovery
// documents (/api, /apis, /api/v1, /apis/<group>/<version>) built from them.
// Only what the provisioner, kubectl and @kubernetes/client-node 1.4.0 use.

export interface ResourceDef {
  /** '' is the core group. */
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly singular: string;
  readonly kind: string;
  readonly namespaced: boolean;
  readonly verbs: readonly string[];
  readonly shortNames?: readonly string[];
  /** Subresources served (`status`, `exec`, `token`…), with the kind they take or return. */
  readonly subresources?: Readonly<Record<string, { kind: string; verbs: readonly string[] }>>;
  /** Not stored: only POSTed and answered (reviews). */
  readonly virtual?: boolean;
}

const CRUD = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
const CRUD_NO_COLLECTION = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];

function r(
  group: string,
  version: string,
  plural: string,
  kind: string,
  namespaced: boolean,
  extra: Partial<Pick<ResourceDef, 'verbs' | 'shortNames' | 'subresources' | 'virtual'>> = {},
): ResourceDef {
  return {
    group,
    version,
    plural,
    singular: kind.toLowerCase(),
    kind,
    namespaced,
    verbs: extra.verbs ?? CRUD,
    ...(extra.shortNames === undefined ? {} : { shortNames: extra.shortNames }),
    ...(extra.subresources === undefined ? {} : { subresources: extra.subresources }),
    ...(extra.virtual === undefined ? {} : { virtual: extra.virtual }),
  };
}

const STATUS = { status: { kind: '', verbs: ['get', 'patch', 'update'] } };
const SCALE = { scale: { kind: 'Scale', verbs: ['get', 'patch', 'update'] } };

export const RESOURCES: readonly ResourceDef[] = [
  r('', 'v1', 'namespaces', 'Namespace', false, {
    verbs: CRUD_NO_COLLECTION,
    shortNames: ['ns'],
    subresources: { ...STATUS, finalize: { kind: 'Namespace', verbs: ['update'] } },
  }),
  r('', 'v1', 'nodes', 'Node', false, { shortNames: ['no'], subresources: STATUS }),
  r('', 'v1', 'pods', 'Pod', true, {
    shortNames: ['po'],
    subresources: {
      ...STATUS,
      exec: { kind: 'PodExecOptions', verbs: ['create', 'get'] },
      log: { kind: 'Pod', verbs: ['get'] },
      portforward: { kind: 'PodPortForwardOptions', verbs: ['create', 'get'] },
      attach: { kind: 'PodAttachOptions', verbs: ['create', 'get'] },
    },
  }),
  r('', 'v1', 'services', 'Service', true, {
    verbs: CRUD_NO_COLLECTION,
    shortNames: ['svc'],
    subresources: STATUS,
  }),
  r('', 'v1', 'secrets', 'Secret', true),
  r('', 'v1', 'configmaps', 'ConfigMap', true, { shortNames: ['cm'] }),
  r('', 'v1', 'serviceaccounts', 'ServiceAccount', true, {
    shortNames: ['sa'],
    subresources: { token: { kind: 'TokenRequest', verbs: ['create'] } },
  }),
  r('', 'v1', 'resourcequotas', 'ResourceQuota', true, {
    shortNames: ['quota'],
    subresources: STATUS,
  }),
  r('', 'v1', 'limitranges', 'LimitRange', true, { shortNames: ['limits'] }),
  r('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim', true, {
    shortNames: ['pvc'],
    subresources: STATUS,
  }),
  r('', 'v1', 'endpoints', 'Endpoints', true, { shortNames: ['ep'] }),
  r('', 'v1', 'events', 'Event', true, { shortNames: ['ev'] }),
  r('apps', 'v1', 'deployments', 'Deployment', true, {
    shortNames: ['deploy'],
    subresources: { ...STATUS, ...SCALE },
  }),
  r('apps', 'v1', 'statefulsets', 'StatefulSet', true, {
    shortNames: ['sts'],
    subresources: { ...STATUS, ...SCALE },
  }),
  r('apps', 'v1', 'replicasets', 'ReplicaSet', true, {
    shortNames: ['rs'],
    subresources: { ...STATUS, ...SCALE },
  }),
  r('apps', 'v1', 'daemonsets', 'DaemonSet', true, { shortNames: ['ds'], subresources: STATUS }),
  r('batch', 'v1', 'jobs', 'Job', true, { subresources: STATUS }),
  r('batch', 'v1', 'cronjobs', 'CronJob', true, { shortNames: ['cj'], subresources: STATUS }),
  r('autoscaling', 'v2', 'horizontalpodautoscalers', 'HorizontalPodAutoscaler', true, {
    shortNames: ['hpa'],
    subresources: STATUS,
  }),
  r('networking.k8s.io', 'v1', 'networkpolicies', 'NetworkPolicy', true, {
    shortNames: ['netpol'],
  }),
  r('rbac.authorization.k8s.io', 'v1', 'roles', 'Role', true),
  r('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding', true),
  r('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', false),
  r('rbac.authorization.k8s.io', 'v1', 'clusterrolebindings', 'ClusterRoleBinding', false),
  r('authorization.k8s.io', 'v1', 'selfsubjectaccessreviews', 'SelfSubjectAccessReview', false, {
    verbs: ['create'],
    virtual: true,
  }),
  r('authorization.k8s.io', 'v1', 'selfsubjectrulesreviews', 'SelfSubjectRulesReview', false, {
    verbs: ['create'],
    virtual: true,
  }),
  r('authentication.k8s.io', 'v1', 'selfsubjectreviews', 'SelfSubjectReview', false, {
    verbs: ['create'],
    virtual: true,
  }),
  r(
    'admissionregistration.k8s.io',
    'v1',
    'mutatingwebhookconfigurations',
    'MutatingWebhookConfiguration',
    false,
  ),
  r(
    'admissionregistration.k8s.io',
    'v1',
    'validatingwebhookconfigurations',
    'ValidatingWebhookConfiguration',
    false,
  ),
];

export function groupVersion(def: { group: string; version: string }): string {
  return def.group === '' ? def.version : `${def.group}/${def.version}`;
}

export function findResource(
  group: string,
  version: string,
  plural: string,
): ResourceDef | undefined {
  return RESOURCES.find((d) => d.group === group && d.version === version && d.plural === plural);
}

/** A served resource by group and plural, at the version the double serves it (v2 for autoscaling). */
export function resource(group: string, plural: string): ResourceDef {
  const d = findResource(group, group === 'autoscaling' ? 'v2' : 'v1', plural);
  if (d === undefined) throw new Error(`no resource ${group}/${plural}`);
  return d;
}

export function findKind(apiVersion: string, kind: string): ResourceDef | undefined {
  return RESOURCES.find((d) => groupVersion(d) === apiVersion && d.kind === kind);
}

function groups(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const d of RESOURCES) {
    if (d.group === '') continue;
    const versions = out.get(d.group) ?? [];
    if (!versions.includes(d.version)) versions.push(d.version);
    out.set(d.group, versions);
  }
  return out;
}

const ADDRESSES = [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1:6443' }];

export function apiVersions(): object {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: ADDRESSES };
}

function groupDoc(name: string, versions: string[]): object {
  const gvs = versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
  return { name, versions: gvs, preferredVersion: gvs[0] };
}

export function apiGroupList(): object {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: [...groups()].map(([name, versions]) => groupDoc(name, versions)),
  };
}

export function apiGroup(name: string): object | undefined {
  const versions = groups().get(name);
  if (versions === undefined) return undefined;
  return { kind: 'APIGroup', apiVersion: 'v1', ...groupDoc(name, versions) };
}

export function apiResourceList(group: string, version: string): object | undefined {
  const defs = RESOURCES.filter((d) => d.group === group && d.version === version);
  if (defs.length === 0) return undefined;
  const resources: object[] = [];
  for (const d of defs) {
    resources.push({
      name: d.plural,
      singularName: d.singular,
      namespaced: d.namespaced,
      kind: d.kind,
      verbs: d.verbs,
      ...(d.shortNames === undefined ? {} : { shortNames: d.shortNames }),
    });
    for (const [sub, s] of Object.entries(d.subresources ?? {})) {
      resources.push({
        name: `${d.plural}/${sub}`,
        singularName: '',
        namespaced: d.namespaced,
        kind: s.kind === '' ? d.kind : s.kind,
        verbs: s.verbs,
      });
    }
  }
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: groupVersion({ group, version }),
    resources,
  };
}
