// The order a lease's access is taken away in (issue 13, D26): the
// RoleBinding first, then the Secret the token is bound to and the
// ServiceAccount (the token stops authenticating), then the quota set to
// `pods: 0` so no controller can start another pod, then the controllers,
// then the pods with grace period 0, then the namespace, and last the
// lease's own labels and taints on its nodes. A pure plan; the provisioner
// carries it out, each step again harmless (404 on delete is success).

import { NAMES } from './objects.js';

export type RevocationStep =
  | {
      readonly step: 'delete';
      readonly apiVersion: string;
      readonly kind: string;
      readonly name: string;
    }
  | { readonly step: 'close-quota' }
  /** Every object of the kind in the namespace, whoever made it. */
  | {
      readonly step: 'delete-all';
      readonly apiVersion: string;
      readonly kind: string;
      readonly gracePeriodSeconds?: number;
    }
  | { readonly step: 'delete-namespace' }
  | { readonly step: 'release-nodes' };

/** The controllers a tenant can make (LEASE_ROLE_RULES), the ones that make the others first. */
export const CONTROLLER_KINDS = [
  { apiVersion: 'batch/v1', kind: 'CronJob' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'apps/v1', kind: 'StatefulSet' },
  { apiVersion: 'apps/v1', kind: 'ReplicaSet' },
  { apiVersion: 'apps/v1', kind: 'DaemonSet' },
  { apiVersion: 'batch/v1', kind: 'Job' },
] as const;

export function revocationPlan(serviceAccount: string): RevocationStep[] {
  return [
    {
      step: 'delete',
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      name: NAMES.roleBinding,
    },
    { step: 'delete', apiVersion: 'v1', kind: 'Secret', name: NAMES.anchorSecret },
    { step: 'delete', apiVersion: 'v1', kind: 'ServiceAccount', name: serviceAccount },
    { step: 'close-quota' },
    ...CONTROLLER_KINDS.map((k) => ({ step: 'delete-all' as const, ...k })),
    { step: 'delete-all', apiVersion: 'v1', kind: 'Pod', gracePeriodSeconds: 0 },
    { step: 'delete-namespace' },
    { step: 'release-nodes' },
  ];
}
