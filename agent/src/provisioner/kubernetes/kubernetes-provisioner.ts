// The Kubernetes provisioner (issue 13, D25-D30): a lease is a namespace of
// its own with guard rails (pod security `baseline`, a GPU quota without
// NodePort / LoadBalancer services, default requests, a NetworkPolicy), its
// nodes labelled and tainted for it, a ServiceAccount with a namespaced
// Role whose token (lease-token.ts) is the customer's kubeconfig, and one
// workspace pod per leased node that SSH sessions exec into. Every step is
// get-then-create-or-update (kube-client.ts), names come from the lease id
// and every object carries `gpux.io/lease=<id>` (objects.ts), so a step can
// run twice and a crash anywhere converges at the next reconciliation
// (D30). The lease as provisioned is kept on its namespace (an annotation),
// so the cluster is where the agent finds its leases again after a restart.
// What stands alone is elsewhere: the objects' shapes (objects.ts), the
// order of revocation (revocation.ts, D26), the token's life
// (lease-token.ts), the API calls (kube-client.ts, calls.ts), placement,
// node health, the pod exec backend.

import { setTimeout as sleep } from 'node:timers/promises';

import type { NodeHealth } from '@gpux/proto';
import { isId, leaseNamespace, leaseUser } from '@gpux/shared';
import type {
  KubernetesObject,
  V1Deployment,
  V1Namespace,
  V1Node,
  V1Pod,
  V1Secret,
} from '@kubernetes/client-node';

import type { Logger } from '../../logger.js';
import { buildKubeconfig } from '../kubeconfig.js';
import { isLeaseSpec } from '../lease-spec.js';
import type { LeaseSpec } from '../lease-spec.js';
import { ProvisionError, checkLeaseNodes, nodeAccessOf } from '../provisioner.js';
import type { LeaseAccess, ProvisionResult, Provisioner, Workspace } from '../provisioner.js';
import type { KubeClient } from './kube-client.js';
import { merged } from './kube-client.js';
import { LeaseTokens } from './lease-token.js';
import type { StoredToken } from './lease-token.js';
import { leasesOnNode, nodeHealth, withLease } from './nodes.js';
import {
  LEASE_LABEL,
  LEASE_SPEC_ANNOTATION,
  PROVISIONED_ANNOTATION,
  WORKSPACE_LABEL,
  anchorSecretObject,
  limitRangeObject,
  namespaceObject,
  networkPolicyObject,
  resourceQuotaObject,
  roleBindingObject,
  roleObject,
  serviceAccountObject,
  workspaceName,
  workspaceObject,
} from './objects.js';
import type { WorkspaceSettings } from './objects.js';
import { releaseNodes, revocationPlan, revocationStep } from './revocation.js';

export interface KubernetesProvisionerOptions {
  readonly kube: KubeClient;
  readonly clusterId: string;
  /** Where lease tokens are kept (0600): `<stateDir>/kubernetes/tokens/<lease id>.json`. */
  readonly stateDir: string;
  /** GPUX_KUBE_PUBLIC_SERVER: the API address customers reach. */
  readonly publicServer: string;
  /** PEM of the cluster's CA, put in every lease kubeconfig. */
  readonly caPem: string;
  readonly workspace: WorkspaceSettings;
  readonly logger: Logger;
  /** How long provisioning waits for the workspace pods to be scheduled. Default 240 s. */
  readonly scheduleTimeoutMs?: number;
  /** Pause between looks at the workspace pods. Default 250 ms. */
  readonly pollMs?: number;
  readonly now?: () => number;
}

export class KubernetesProvisioner implements Provisioner {
  readonly kind = 'kubernetes' as const;
  private clusterNodes: ReadonlySet<string> | undefined;
  private readonly now: () => number;
  private readonly tokens: LeaseTokens;
  /** namespace → lease id, for the admission webhook (a namespace's lease never changes). */
  private readonly namespaceLeases = new Map<string, string>();

  constructor(private readonly o: KubernetesProvisionerOptions) {
    this.now = o.now ?? Date.now;
    this.tokens = new LeaseTokens({
      kube: o.kube,
      stateDir: o.stateDir,
      logger: o.logger,
      now: this.now,
    });
  }

  setClusterNodes(hostnames: readonly string[]): void {
    this.clusterNodes = new Set(hostnames);
  }

  async provision(lease: LeaseSpec, signal?: AbortSignal): Promise<ProvisionResult> {
    this.check(lease);
    const kube = this.o.kube;
    let changed = false;
    const step = async <T extends KubernetesObject>(
      desired: T,
      update?: (existing: T) => T | undefined,
    ): Promise<T> => {
      signal?.throwIfAborted();
      const r = await kube.ensure(desired, update);
      if (r.changed) changed = true;
      return r.object;
    };

    // 1. The namespace, refusing one that is not this lease's (never touched).
    const ns = await step(namespaceObject(lease), (existing: V1Namespace) => {
      const owner = existing.metadata?.labels?.[LEASE_LABEL];
      if (owner !== lease.leaseId) {
        throw new ProvisionError(
          `namespace ${lease.namespace} exists and is not labelled ${LEASE_LABEL}=${lease.leaseId}; it is left alone`,
          true,
        );
      }
      if (existing.metadata?.deletionTimestamp !== undefined) {
        throw new ProvisionError(`namespace ${lease.namespace} is still being deleted`, false);
      }
      return merged(existing, namespaceObject(lease));
    });
    this.namespaceLeases.set(lease.namespace, lease.leaseId);
    // 2. Guard rails.
    await step(resourceQuotaObject(lease));
    await step(limitRangeObject(lease));
    await step(networkPolicyObject(lease));
    // 3. Placement: the lease's nodes labelled and tainted for it.
    for (const node of lease.nodes) {
      signal?.throwIfAborted();
      const r = await kube.modify<V1Node>(
        { apiVersion: 'v1', kind: 'Node', name: node.hostname },
        (n) => withLease(n, lease.leaseId),
      );
      if (r === undefined) {
        throw new ProvisionError(`no Kubernetes node named ${node.hostname}`, false);
      }
      if (r.changed) changed = true;
    }
    // 4. Access.
    await step(serviceAccountObject(lease));
    await step(roleObject(lease));
    await step(roleBindingObject(lease));
    const secret = await step<V1Secret>(anchorSecretObject(lease));
    signal?.throwIfAborted();
    const { token, minted } = await this.tokens.current(lease, secret.metadata?.uid ?? '');
    if (minted) changed = true;
    // 5. Workspaces: made once; afterwards the customer's (they may scale them away).
    for (let k = 1; k <= lease.nodes.length; k++) {
      await step(workspaceObject(lease, k, this.o.workspace), () => undefined);
    }
    // 6. Provisioned once the workspace pods are scheduled (pulling the image may take longer).
    if (ns.metadata?.annotations?.[PROVISIONED_ANNOTATION] === undefined) {
      await this.waitScheduled(lease, signal);
      const done = namespaceObject(lease);
      done.metadata = {
        ...done.metadata,
        annotations: {
          ...done.metadata?.annotations,
          [PROVISIONED_ANNOTATION]: new Date(this.now()).toISOString(),
        },
      };
      await step(done, (e) => {
        if (e.metadata?.labels?.[LEASE_LABEL] !== lease.leaseId) {
          throw new ProvisionError(`namespace ${lease.namespace} changed owner`, true);
        }
        return e.metadata?.annotations?.[PROVISIONED_ANNOTATION] === undefined
          ? merged(e, done)
          : undefined;
      });
      changed = true;
    }
    return { access: this.accessOf(lease, token), changed };
  }

  async revoke(leaseId: string): Promise<void> {
    if (!isId('lse_', leaseId)) return;

    const kube = this.o.kube;
    const namespace = leaseNamespace(leaseId);
    const ns = await kube.read<V1Namespace>({
      apiVersion: 'v1',
      kind: 'Namespace',
      name: namespace,
    });
    // An unlabelled namespace (or another lease's) is never touched.
    const ours = ns !== undefined && ns.metadata?.labels?.[LEASE_LABEL] === leaseId;
    const lease = ours ? this.specOf(ns, leaseId) : undefined;
    for (const s of revocationPlan(leaseUser(leaseId))) {
      if (s.step === 'release-nodes') await releaseNodes(kube, leaseId);
      else if (ours) await revocationStep(kube, s, namespace, leaseId, lease);
    }
    this.namespaceLeases.delete(namespace);
    await this.tokens.forget(leaseId);
  }

  async list(): Promise<Workspace[]> {
    const kube = this.o.kube;
    const namespaces = await kube.list<V1Namespace>('v1', 'Namespace', undefined, LEASE_LABEL);
    const out: Workspace[] = [];
    const seen = new Set<string>();
    for (const ns of namespaces) {
      const leaseId = ns.metadata?.labels?.[LEASE_LABEL] ?? '';
      // Only the namespaces named after their label's lease are ours.
      if (!isId('lse_', leaseId) || ns.metadata?.name !== leaseNamespace(leaseId)) continue;
      seen.add(leaseId);
      this.namespaceLeases.set(leaseNamespace(leaseId), leaseId);
      const lease = this.specOf(ns, leaseId);
      let access: LeaseAccess | undefined;
      const done =
        ns.metadata.annotations?.[PROVISIONED_ANNOTATION] !== undefined &&
        ns.metadata.deletionTimestamp === undefined;
      if (lease !== undefined && done) {
        const stored = await this.tokens.stored(leaseId);
        if (stored !== undefined) access = this.accessOf(lease, stored);
      }
      out.push({ leaseId, lease, access });
    }
    // Nodes still carrying a lease whose namespace is gone (a revocation cut short).
    for (const node of await kube.list<V1Node>('v1', 'Node')) {
      const name = node.metadata?.name ?? '';
      if (this.clusterNodes !== undefined && !this.clusterNodes.has(name)) continue;
      for (const leaseId of leasesOnNode(node)) {
        if (!isId('lse_', leaseId) || seen.has(leaseId)) continue;
        seen.add(leaseId);
        out.push({ leaseId, lease: undefined, access: undefined });
      }
    }
    return out;
  }

  async health(): Promise<NodeHealth[]> {
    const nodes = await this.o.kube.list<V1Node>('v1', 'Node');
    const byName = new Map(nodes.map((n) => [n.metadata?.name ?? '', n]));
    return [...(this.clusterNodes ?? [])].map((hostname) =>
      nodeHealth(hostname, byName.get(hostname)),
    );
  }

  /**
   * The admission webhook's question: which lease is this namespace's
   * (its `gpux.io/lease` label)? undefined: none. Throws when it cannot be read.
   */
  async leaseOfNamespace(namespace: string): Promise<string | undefined> {
    const known = this.namespaceLeases.get(namespace);
    if (known !== undefined) return known;
    const ns = await this.o.kube.read<V1Namespace>({
      apiVersion: 'v1',
      kind: 'Namespace',
      name: namespace,
    });
    const leaseId = ns?.metadata?.labels?.[LEASE_LABEL];
    if (leaseId === undefined || !isId('lse_', leaseId) || namespace !== leaseNamespace(leaseId)) {
      return undefined;
    }
    this.namespaceLeases.set(namespace, leaseId);
    return leaseId;
  }

  /**
   * The lease as provisioned, from its namespace's annotation; undefined when
   * missing or unreadable (logged: reconciliation provisions it again, which
   * writes it again, or revokes it).
   */
  private specOf(ns: V1Namespace, leaseId: string): LeaseSpec | undefined {
    const raw = ns.metadata?.annotations?.[LEASE_SPEC_ANNOTATION];
    if (raw === undefined) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch (err) {
      if (!(err instanceof SyntaxError)) throw err;
      this.o.logger.warn(
        { leaseId, err },
        `the lease record on namespace ${ns.metadata?.name ?? ''} is not JSON`,
      );
      return undefined;
    }
    if (isLeaseSpec(parsed, leaseId)) return parsed;
    this.o.logger.warn(
      { leaseId, annotation: LEASE_SPEC_ANNOTATION },
      `the lease record on namespace ${ns.metadata?.name ?? ''} is not this lease's`,
    );
    return undefined;
  }

  private check(lease: LeaseSpec): void {
    if (!isId('lse_', lease.leaseId)) {
      throw new ProvisionError(`${JSON.stringify(lease.leaseId)} is not a lease id`, true);
    }
    if (lease.namespace !== leaseNamespace(lease.leaseId)) {
      throw new ProvisionError(
        `namespace ${lease.namespace} is not ${leaseNamespace(lease.leaseId)} (names come from the lease id)`,
        true,
      );
    }
    if (lease.leaseUser !== leaseUser(lease.leaseId)) {
      throw new ProvisionError(
        `lease user ${lease.leaseUser} is not ${leaseUser(lease.leaseId)}`,
        true,
      );
    }
    checkLeaseNodes(lease, this.clusterNodes);
  }

  /** Every workspace Deployment that wants a pod has one bound to a node. */
  private async waitScheduled(lease: LeaseSpec, signal?: AbortSignal): Promise<void> {
    const deadline = this.now() + (this.o.scheduleTimeoutMs ?? 240_000);
    for (;;) {
      signal?.throwIfAborted();
      const waiting = await this.unscheduled(lease);
      if (waiting.length === 0) return;
      if (this.now() >= deadline) {
        throw new ProvisionError(`workspace pods not scheduled yet: ${waiting.join(', ')}`, false);
      }
      await sleep(this.o.pollMs ?? 250, undefined, signal === undefined ? {} : { signal });
    }
  }

  private async unscheduled(lease: LeaseSpec): Promise<string[]> {
    const kube = this.o.kube;
    const pods = await kube.list<V1Pod>(
      'v1',
      'Pod',
      lease.namespace,
      `${LEASE_LABEL}=${lease.leaseId}`,
    );
    const waiting: string[] = [];
    for (let k = 1; k <= lease.nodes.length; k++) {
      const scheduled = pods.some(
        (p) =>
          p.metadata?.labels?.[WORKSPACE_LABEL] === String(k) &&
          p.metadata.deletionTimestamp === undefined &&
          ((p.spec?.nodeName ?? '') !== '' ||
            p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'True') ===
              true),
      );
      if (scheduled) continue;
      const d = await kube.read<V1Deployment>({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: workspaceName(k),
        namespace: lease.namespace,
      });
      // Scaled away or removed by the customer: nothing to wait for.
      if (d === undefined || d.spec?.replicas === 0) continue;
      waiting.push(workspaceName(k));
    }
    return waiting;
  }

  private accessOf(lease: LeaseSpec, token: StoredToken): LeaseAccess {
    const kubeconfig = buildKubeconfig({
      clusterName: `gpux-${this.o.clusterId.replace(/_/g, '-')}`,
      server: this.o.publicServer,
      caPem: this.o.caPem,
      namespace: lease.namespace,
      userName: lease.leaseUser,
      token: token.token,
      comment: [
        `Lease ${lease.leaseId}, namespace ${lease.namespace}.`,
        `The token expires at ${new Date(token.expiresMs).toISOString()} and dies when the lease is revoked.`,
      ],
    });
    return {
      leaseId: lease.leaseId,
      nodes: nodeAccessOf(lease, (n, k) => ({
        kind: 'pod',
        kube: this.o.kube,
        leaseId: lease.leaseId,
        namespace: lease.namespace,
        nodeIndex: k,
        hostname: n.hostname,
      })),
      kubeconfig,
      madeMs: token.issuedMs,
      refreshAtMs:
        Number.isFinite(token.refreshAtMs) && token.refreshAtMs < lease.endMs
          ? token.refreshAtMs
          : undefined,
    };
  }
}
