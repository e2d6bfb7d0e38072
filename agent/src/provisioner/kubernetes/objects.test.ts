import { describe, expect, it } from 'vitest';

import type { LeaseSpec } from '../lease-spec.js';
import {
  anchorSecretObject,
  closedQuotaObject,
  limitRangeObject,
  namespaceObject,
  networkPolicyObject,
  resourceQuotaObject,
  roleBindingObject,
  roleObject,
  serviceAccountObject,
  workspaceObject,
} from './objects.js';
import { LEASE_ROLE_RULES } from './permissions.js';
import { CONTROLLER_KINDS, revocationPlan } from './revocation.js';

const ID = 'lse_01jdq3m5x0aaaaaaaaaaaaaaaa';
const NS = 'gpux-lse-01jdq3m5x0aaaaaaaaaaaaaaaa';
const USER = 'lse-01jdq3m5x0aaaaaaaaaaaaaaaa';
const LEASE: LeaseSpec = {
  leaseId: ID,
  namespace: NS,
  leaseUser: USER,
  nodes: [
    { hostname: 'gpu-node-a', sshUser: `${USER}-1` },
    { hostname: 'gpu-node-b', sshUser: `${USER}-2` },
  ],
  gpuCount: 16,
  startMs: 1_700_000_000_000,
  endMs: 1_700_003_600_000,
  sshPublicKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample buyer'],
  sourceLeaseId: null,
};
const LABELS = { 'gpux.io/lease': ID, 'app.kubernetes.io/managed-by': 'gpux-agent' };

describe('the objects of a lease (issue 13, D30: names from the lease id, every object labelled)', () => {
  it('namespace: baseline pod security, the lease label and the lease as provisioned', () => {
    expect(namespaceObject(LEASE)).toEqual({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: NS,
        labels: { ...LABELS, 'pod-security.kubernetes.io/enforce': 'baseline' },
        annotations: { 'gpux.io/lease-spec': JSON.stringify(LEASE) },
      },
    });
  });

  it('quota: the lease GPUs, no NodePort, no LoadBalancer; revocation adds pods: 0', () => {
    const meta = { name: 'gpux-lease', namespace: NS, labels: LABELS };
    expect(resourceQuotaObject(LEASE)).toEqual({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: meta,
      spec: {
        hard: {
          'requests.nvidia.com/gpu': '16',
          'services.nodeports': '0',
          'services.loadbalancers': '0',
        },
      },
    });
    expect(closedQuotaObject(LEASE, NS, ID).spec.hard).toEqual({
      'requests.nvidia.com/gpu': '16',
      'services.nodeports': '0',
      'services.loadbalancers': '0',
      pods: '0',
    });
    expect(closedQuotaObject(undefined, NS, ID).spec.hard).toEqual({ pods: '0' });
  });

  it('limit range: default requests, no default limits', () => {
    expect(limitRangeObject(LEASE)).toEqual({
      apiVersion: 'v1',
      kind: 'LimitRange',
      metadata: { name: 'gpux-lease', namespace: NS, labels: LABELS },
      spec: { limits: [{ type: 'Container', defaultRequest: { cpu: '100m', memory: '256Mi' } }] },
    });
  });

  it('network policy: own namespace, DNS to kube-system, internet without metadata and private ranges', () => {
    expect(networkPolicyObject(LEASE)).toEqual({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'gpux-lease-isolation', namespace: NS, labels: LABELS },
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
            ports: [
              { protocol: 'UDP', port: 53 },
              { protocol: 'TCP', port: 53 },
            ],
          },
          {
            to: [
              {
                ipBlock: {
                  cidr: '0.0.0.0/0',
                  except: [
                    '169.254.169.254/32',
                    '10.0.0.0/8',
                    '172.16.0.0/12',
                    '192.168.0.0/16',
                    '100.64.0.0/10',
                  ],
                },
              },
              { ipBlock: { cidr: '::/0', except: ['fc00::/7', 'fe80::/10'] } },
            ],
          },
        ],
      },
    });
  });

  it('access: service account, the lease Role, its binding and the anchor secret', () => {
    expect(serviceAccountObject(LEASE)).toEqual({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: USER, namespace: NS, labels: LABELS },
      automountServiceAccountToken: false,
    });
    const role = roleObject(LEASE);
    expect(role.metadata).toEqual({ name: 'gpux-lease', namespace: NS, labels: LABELS });
    expect(role.rules).toEqual(LEASE_ROLE_RULES);
    expect(roleBindingObject(LEASE)).toEqual({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'gpux-lease', namespace: NS, labels: LABELS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'gpux-lease' },
      subjects: [{ kind: 'ServiceAccount', name: USER, namespace: NS }],
    });
    const secret = anchorSecretObject(LEASE);
    expect(secret).toMatchObject({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: { name: 'gpux-lease-token-anchor', namespace: NS, labels: LABELS },
    });
    expect(secret.data).toBeUndefined();
  });

  it('workspace: one replica, Recreate, pinned to its node with its 8 GPUs', () => {
    const w = workspaceObject(LEASE, 2, {
      image: 'nvidia/cuda:12.4.1-base-ubuntu22.04',
      command: 'sleep infinity',
    });
    const labels = { ...LABELS, 'gpux.io/workspace': '2' };
    expect(w).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'workspace-2',
        namespace: NS,
        labels,
        annotations: { 'gpux.io/node': 'gpu-node-b', 'gpux.io/ssh-user': `${USER}-2` },
      },
      spec: {
        replicas: 1,
        strategy: { type: 'Recreate' },
        selector: { matchLabels: { 'gpux.io/lease': ID, 'gpux.io/workspace': '2' } },
        template: {
          metadata: { labels, annotations: { 'gpux.io/node': 'gpu-node-b' } },
          spec: {
            nodeSelector: { 'gpux.io/lease': ID, 'kubernetes.io/hostname': 'gpu-node-b' },
            tolerations: [
              { key: 'gpux.io/lease', operator: 'Equal', value: ID, effect: 'NoSchedule' },
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
            ],
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            terminationGracePeriodSeconds: 10,
            containers: [
              {
                name: 'workspace',
                image: 'nvidia/cuda:12.4.1-base-ubuntu22.04',
                command: ['/bin/sh', '-c', 'sleep infinity'],
                resources: {
                  requests: { 'nvidia.com/gpu': '8' },
                  limits: { 'nvidia.com/gpu': '8' },
                },
              },
            ],
          },
        },
      },
    });
    expect(() => workspaceObject(LEASE, 3, { image: 'x', command: 'y' })).toThrow(/no node 3/);
  });
});

describe('revocation order (issue 13, D26)', () => {
  it('binding, secret and account, quota pods: 0, controllers, pods at grace 0, namespace, nodes', () => {
    expect(revocationPlan(USER)).toEqual([
      {
        step: 'delete',
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        name: 'gpux-lease',
      },
      { step: 'delete', apiVersion: 'v1', kind: 'Secret', name: 'gpux-lease-token-anchor' },
      { step: 'delete', apiVersion: 'v1', kind: 'ServiceAccount', name: USER },
      { step: 'close-quota' },
      { step: 'delete-all', apiVersion: 'batch/v1', kind: 'CronJob' },
      { step: 'delete-all', apiVersion: 'apps/v1', kind: 'Deployment' },
      { step: 'delete-all', apiVersion: 'apps/v1', kind: 'StatefulSet' },
      { step: 'delete-all', apiVersion: 'apps/v1', kind: 'ReplicaSet' },
      { step: 'delete-all', apiVersion: 'apps/v1', kind: 'DaemonSet' },
      { step: 'delete-all', apiVersion: 'batch/v1', kind: 'Job' },
      { step: 'delete-all', apiVersion: 'v1', kind: 'Pod', gracePeriodSeconds: 0 },
      { step: 'delete-namespace' },
      { step: 'release-nodes' },
    ]);
    expect(CONTROLLER_KINDS.map((k) => k.kind)).toEqual(
      expect.arrayContaining(['Deployment', 'StatefulSet', 'ReplicaSet', 'DaemonSet', 'Job']),
    );
  });
});
