// The Kubernetes objects of one lease (D28, D30), as pure builders: every
// name is derived from the lease id (its namespace is `gpux-<lease id>`,
// everything else lives in that namespace under fixed names), and every
// object carries the label `gpux.io/lease=<lease id>`, which is how the
// reconciliation finds them again and how nothing unlabelled is ever touched.

import type {
  V1Deployment,
  V1LimitRange,
  V1Namespace,
  V1NetworkPolicy,
  V1ResourceQuota,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1ServiceAccount,
  V1Toleration,
} from '@kubernetes/client-node';

import type { LeaseSpec } from '../lease-spec.js';
import { LEASE_ROLE_RULES, ruleObjects } from './permissions.js';

/** The label on every object of a lease, on its namespace and on its nodes (with its taint). */
export const LEASE_LABEL = 'gpux.io/lease';
/** The workspace pods of a lease: `gpux.io/workspace=<k>` for its k-th node (1-based). */
export const WORKSPACE_LABEL = 'gpux.io/workspace';
/** The lease as provisioned (LeaseSpec as JSON), on its namespace: what `list()` reads back. */
export const LEASE_SPEC_ANNOTATION = 'gpux.io/lease-spec';
/** Set on the namespace when provisioning finished (namespace, access, workspace pods scheduled). */
export const PROVISIONED_ANNOTATION = 'gpux.io/provisioned-at';
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'gpux-agent' } as const;

/** Fixed names inside the lease's namespace. */
export const NAMES = {
  quota: 'gpux-lease',
  limitRange: 'gpux-lease',
  networkPolicy: 'gpux-lease-isolation',
  role: 'gpux-lease',
  roleBinding: 'gpux-lease',
  /** The Secret the lease's token is bound to: deleting it kills the token (D28). */
  anchorSecret: 'gpux-lease-token-anchor',
  workspaceContainer: 'workspace',
} as const;

/** The k-th node's workspace Deployment (1-based). */
export function workspaceName(nodeIndex: number): string {
  return `workspace-${nodeIndex}`;
}

/** The ServiceAccount is named after the lease's user (`lse-…`), as the kubeconfig's user is. */
export function serviceAccountName(lease: LeaseSpec): string {
  return lease.leaseUser;
}

export const CLOUD_METADATA_CIDR = '169.254.169.254/32';
/**
 * Cluster-internal addresses (pods, services of other namespaces) are not
 * "the internet": egress to them is refused, so the namespace is isolated
 * from every other one whichever CNI assigns the pod and service ranges.
 */
export const PRIVATE_CIDRS = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10'];
export const PRIVATE_CIDRS_V6 = ['fc00::/7', 'fe80::/10'];

export function leaseLabels(leaseId: string): Record<string, string> {
  return { [LEASE_LABEL]: leaseId, ...MANAGED_BY };
}

function meta(
  lease: LeaseSpec,
  name: string,
): { name: string; namespace: string; labels: Record<string, string> } {
  return { name, namespace: lease.namespace, labels: leaseLabels(lease.leaseId) };
}

/** The lease's spec as the namespace keeps it (read back by `list()` after a restart). */
export function leaseSpecAnnotation(lease: LeaseSpec): string {
  return JSON.stringify(lease);
}

export function namespaceObject(lease: LeaseSpec): V1Namespace {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: lease.namespace,
      labels: {
        ...leaseLabels(lease.leaseId),
        'pod-security.kubernetes.io/enforce': 'baseline',
      },
      annotations: { [LEASE_SPEC_ANNOTATION]: leaseSpecAnnotation(lease) },
    },
  };
}

/** `requests.nvidia.com/gpu` = the lease's GPUs; no NodePort or LoadBalancer service. */
export function resourceQuotaObject(lease: LeaseSpec): V1ResourceQuota {
  return {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: meta(lease, NAMES.quota),
    spec: {
      hard: {
        'requests.nvidia.com/gpu': String(lease.gpuCount),
        'services.nodeports': '0',
        'services.loadbalancers': '0',
      },
    },
  };
}

/** Revocation: the quota with `pods: 0`, so no controller can start a pod again. */
export function closedQuotaObject(
  lease: LeaseSpec | undefined,
  namespace: string,
  leaseId: string,
) {
  const hard = lease === undefined ? {} : (resourceQuotaObject(lease).spec?.hard ?? {});
  return {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name: NAMES.quota, namespace, labels: leaseLabels(leaseId) },
    spec: { hard: { ...hard, pods: '0' } },
  } satisfies V1ResourceQuota;
}

/**
 * Default requests for containers that set none. No default limits: a
 * default memory limit would kill GPU jobs that did not ask for one.
 */
export function limitRangeObject(lease: LeaseSpec): V1LimitRange {
  return {
    apiVersion: 'v1',
    kind: 'LimitRange',
    metadata: meta(lease, NAMES.limitRange),
    spec: {
      limits: [{ type: 'Container', defaultRequest: { cpu: '100m', memory: '256Mi' } }],
    },
  };
}

/**
 * Isolation: ingress only from the namespace's own pods; egress to its own
 * pods, to the cluster's DNS resolver (kube-system's kube-dns pods, port 53),
 * and to the internet, which excludes the cloud metadata address and the
 * private ranges other namespaces' pods and services live in.
 */
export function networkPolicyObject(lease: LeaseSpec): V1NetworkPolicy {
  const dnsPorts = [
    { protocol: 'UDP', port: 53 },
    { protocol: 'TCP', port: 53 },
  ];
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: meta(lease, NAMES.networkPolicy),
    spec: {
      podSelector: {},
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ _from: [{ podSelector: {} }] }],
      egress: [
        { to: [{ podSelector: {} }] },
        {
          to: [
            {
              namespaceSelector: {
                matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' },
              },
              podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
            },
          ],
          ports: dnsPorts,
        },
        {
          to: [
            { ipBlock: { cidr: '0.0.0.0/0', except: [CLOUD_METADATA_CIDR, ...PRIVATE_CIDRS] } },
            { ipBlock: { cidr: '::/0', except: PRIVATE_CIDRS_V6 } },
          ],
        },
      ],
    },
  };
}

export function serviceAccountObject(lease: LeaseSpec): V1ServiceAccount {
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: meta(lease, serviceAccountName(lease)),
    automountServiceAccountToken: false,
  };
}

/** The lease's Role: LEASE_ROLE_RULES in its namespace, nothing cluster-wide. */
export function roleObject(lease: LeaseSpec): V1Role {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: meta(lease, NAMES.role),
    rules: ruleObjects(LEASE_ROLE_RULES),
  };
}

export function roleBindingObject(lease: LeaseSpec): V1RoleBinding {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: meta(lease, NAMES.roleBinding),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: NAMES.role },
    subjects: [
      { kind: 'ServiceAccount', name: serviceAccountName(lease), namespace: lease.namespace },
    ],
  };
}

/** The Secret the token is bound to (TokenRequest boundObjectRef): its deletion ends the token. */
export function anchorSecretObject(lease: LeaseSpec): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      ...meta(lease, NAMES.anchorSecret),
      annotations: {
        'gpux.io/purpose':
          "the lease's kubeconfig token is bound to this Secret; deleting it revokes the token",
      },
    },
    type: 'Opaque',
  };
}

/**
 * Where every pod of the lease may run (D30, the admission webhook): the
 * lease's nodes carry `gpux.io/lease=<id>` and the NoSchedule taint of the
 * same key and value. The usual NoExecute tolerations of a not-ready or
 * unreachable node (300 s, DefaultTolerationSeconds) are kept, and GPU
 * nodes' common `nvidia.com/gpu` NoSchedule taint is tolerated.
 */
export function leaseTolerations(leaseId: string): V1Toleration[] {
  return [
    { key: LEASE_LABEL, operator: 'Equal', value: leaseId, effect: 'NoSchedule' },
    { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
    {
      key: 'node.kubernetes.io/not-ready',
      operator: 'Exists',
      effect: 'NoExecute',
      tolerationSeconds: 300,
    },
    {
      key: 'node.kubernetes.io/unreachable',
      operator: 'Exists',
      effect: 'NoExecute',
      tolerationSeconds: 300,
    },
  ];
}

export interface WorkspaceSettings {
  /** GPUX_WORKSPACE_IMAGE */
  readonly image: string;
  /** GPUX_WORKSPACE_COMMAND, run by /bin/sh -c. */
  readonly command: string;
}

/** GPUs of one leased node: the lease's GPUs spread evenly (8 per node, rule 4). */
export function gpusPerNode(lease: LeaseSpec): number {
  return Math.floor(lease.gpuCount / Math.max(1, lease.nodes.length));
}

/**
 * The k-th node's workspace: a Deployment of one replica (the customer may
 * scale it to zero to use the GPUs for their own pods; nothing scales it
 * back), Recreate so a new pod never waits for the old one's GPUs, pinned
 * to that node and holding all of its GPUs. SSH sessions exec into its pod.
 */
export function workspaceObject(
  lease: LeaseSpec,
  nodeIndex: number,
  settings: WorkspaceSettings,
): V1Deployment {
  const node = lease.nodes[nodeIndex - 1];
  if (node === undefined) throw new Error(`lease ${lease.leaseId} has no node ${nodeIndex}`);
  const selector = { [LEASE_LABEL]: lease.leaseId, [WORKSPACE_LABEL]: String(nodeIndex) };
  const gpus = String(gpusPerNode(lease));
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      ...meta(lease, workspaceName(nodeIndex)),
      labels: { ...leaseLabels(lease.leaseId), [WORKSPACE_LABEL]: String(nodeIndex) },
      annotations: { 'gpux.io/node': node.hostname, 'gpux.io/ssh-user': node.sshUser },
    },
    spec: {
      replicas: 1,
      strategy: { type: 'Recreate' },
      selector: { matchLabels: selector },
      template: {
        metadata: {
          labels: { ...leaseLabels(lease.leaseId), [WORKSPACE_LABEL]: String(nodeIndex) },
          annotations: { 'gpux.io/node': node.hostname },
        },
        spec: {
          nodeSelector: { [LEASE_LABEL]: lease.leaseId, 'kubernetes.io/hostname': node.hostname },
          tolerations: leaseTolerations(lease.leaseId),
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: 10,
          containers: [
            {
              name: NAMES.workspaceContainer,
              image: settings.image,
              command: ['/bin/sh', '-c', settings.command],
              resources: {
                requests: { 'nvidia.com/gpu': gpus },
                limits: { 'nvidia.com/gpu': gpus },
              },
            },
          ],
        },
      },
    },
  };
}
