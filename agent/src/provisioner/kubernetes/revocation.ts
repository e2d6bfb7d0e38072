// The order a lease's access is taken away in (issue 13, D26): the
// RoleBinding first, then the Secret the token is bound to and the
// ServiceAccount (the token stops authenticating), then the quota set to
// `pods: 0` so no controller can start another pod, then the controllers,
// then the pods with grace period 0, then the namespace, and last the
// lease's own labels and taints on its nodes. A pure plan, and how each
// step is carried out, each again harmless (404 on delete is success); the
// provisioner runs them in order.

import type { V1Node } from '@kubernetes/client-node';

import type { LeaseSpec } from '../lease-spec.js';
import { refOf, statusOf } from './kube-client.js';
import type { KubeClient } from './kube-client.js';
import { withoutLease } from './nodes.js';
import { NAMES, closedQuotaObject } from './objects.js';

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

/** One step in the lease's namespace (`lease`: as provisioned, if known). */
export async function revocationStep(
  kube: KubeClient,
  s: Exclude<RevocationStep, { step: 'release-nodes' }>,
  namespace: string,
  leaseId: string,
  lease: LeaseSpec | undefined,
): Promise<void> {
  switch (s.step) {
    case 'delete':
      await kube.delete({ apiVersion: s.apiVersion, kind: s.kind, name: s.name, namespace });
      return;
    case 'close-quota': {
      const closed = closedQuotaObject(lease, namespace, leaseId);
      await kube.ensure(closed, (e) =>
        e.spec?.hard?.['pods'] === '0'
          ? undefined
          : { ...e, spec: { ...e.spec, hard: { ...e.spec?.hard, pods: '0' } } },
      );
      return;
    }
    case 'delete-all': {
      const items = await kube.list(s.apiVersion, s.kind, namespace);
      await Promise.all(
        items.map((o) =>
          kube.delete(
            { ...refOf(o), apiVersion: s.apiVersion, kind: s.kind, namespace },
            s.gracePeriodSeconds === undefined
              ? { propagationPolicy: 'Background' }
              : { gracePeriodSeconds: s.gracePeriodSeconds },
          ),
        ),
      );
      return;
    }
    case 'delete-namespace':
      try {
        await kube.delete(
          { apiVersion: 'v1', kind: 'Namespace', name: namespace },
          { propagationPolicy: 'Background' },
        );
      } catch (err) {
        // 409: already being deleted, what was asked for.
        if (statusOf(err)?.code !== 409) throw err;
      }
      return;
  }
}

/** Only the labels and taints carrying this lease's id go (a resale keeps the next lease's). */
export async function releaseNodes(kube: KubeClient, leaseId: string): Promise<void> {
  const nodes = await kube.list<V1Node>('v1', 'Node');
  for (const node of nodes) {
    if (withoutLease(node, leaseId) === undefined) continue;
    await kube.modify<V1Node>(
      { apiVersion: 'v1', kind: 'Node', name: node.metadata?.name ?? '' },
      (n) => withoutLease(n, leaseId),
    );
  }
}
