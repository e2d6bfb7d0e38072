// The Kubernetes provisioner (issue 13, D25-D30): a lease is a namespace of
// its own with guard rails (pod security `baseline`, a GPU quota without
// NodePort / LoadBalancer services, default requests, a NetworkPolicy), its
// nodes labelled and tainted for it, a ServiceAccount with a namespaced
// Role whose token (bound to an anchor Secret, expiring no later than the
// lease) is the customer's kubeconfig, and one workspace pod per leased node
// that SSH sessions exec into. Every step is get-then-create-or-update
// (kube-client.ts), names come from the lease id and every object carries
// `gpux.io/lease=<id>` (objects.ts), so a step can run twice and a crash
// anywhere converges at the next reconciliation (D30). The lease as
// provisioned is kept on its namespace (an annotation), so the cluster is
// where the agent finds its leases again after a restart; the token is kept
// in the agent's state directory (0600), never in the cluster.
//
// One file of ~670 lines on purpose: provision, revoke, the token's refresh
// and the listing for reconciliation are steps on the same objects of one
// lease, each written to converge when run again, and reading them side by
// side is how that is checked. What stands alone is elsewhere: the objects'
// shapes (objects.ts), the order of revocation (revocation.ts, D26), the API
// calls (kube-client.ts, calls.ts), placement, node health, the pod exec
// backend.

import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import type { NodeHealth } from '@gpux/proto';
import { isId, leaseNamespace, leaseUser } from '@gpux/shared';
import type {
  AuthenticationV1TokenRequest,
  KubernetesObject,
  V1Deployment,
  V1Namespace,
  V1Node,
  V1Pod,
  V1Secret,
} from '@kubernetes/client-node';

import type { Logger } from '../../logger.js';
import { readJsonFile, writeFileAtomic } from '../../state/atomic-file.js';
import { buildKubeconfig } from '../kubeconfig.js';
import type { LeaseSpec } from '../lease-spec.js';
import { ProvisionError, checkLeaseNodes } from '../provisioner.js';
import type {
  LeaseAccess,
  NodeAccess,
  ProvisionResult,
  Provisioner,
  Workspace,
} from '../provisioner.js';
import type { KubeClient, ObjectRef } from './kube-client.js';
import { statusOf } from './kube-client.js';
import { leasesOnNode, nodeHealth, withLease, withoutLease } from './nodes.js';
import {
  LEASE_LABEL,
  LEASE_SPEC_ANNOTATION,
  NAMES,
  PROVISIONED_ANNOTATION,
  WORKSPACE_LABEL,
  anchorSecretObject,
  closedQuotaObject,
  limitRangeObject,
  namespaceObject,
  networkPolicyObject,
  resourceQuotaObject,
  roleBindingObject,
  roleObject,
  serviceAccountName,
  serviceAccountObject,
  workspaceName,
  workspaceObject,
} from './objects.js';
import type { WorkspaceSettings } from './objects.js';
import { revocationPlan } from './revocation.js';
import type { RevocationStep } from './revocation.js';

/** A lease's session backend: what revocation must end at once. */
export interface PodBackend {
  terminate?(): Promise<void>;
}

export interface PodBackendTarget {
  readonly leaseId: string;
  readonly namespace: string;
  readonly nodeIndex: number;
  readonly hostname: string;
}

export interface KubernetesProvisionerOptions<B extends PodBackend> {
  readonly kube: KubeClient;
  readonly clusterId: string;
  /** Where lease tokens are kept (0600): `<stateDir>/kubernetes/tokens/<lease id>.json`. */
  readonly stateDir: string;
  /** GPUX_KUBE_PUBLIC_SERVER: the API address customers reach. */
  readonly publicServer: string;
  /** PEM of the cluster's CA, put in every lease kubeconfig. */
  readonly caPem: string;
  readonly workspace: WorkspaceSettings;
  readonly backendFactory: (target: PodBackendTarget) => B;
  readonly logger: Logger;
  /**
   * A lease's kubeconfig changed on its own (its token was refreshed before
   * the lease's end): the agent reports the new one as it reported the first.
   */
  readonly onAccessChanged?: (leaseId: string) => void;
  /** How long provisioning waits for the workspace pods to be scheduled. Default 240 s. */
  readonly scheduleTimeoutMs?: number;
  /** Pause between looks at the workspace pods. Default 250 ms. */
  readonly pollMs?: number;
  readonly now?: () => number;
}

/** Real API servers refuse a token life under 10 minutes (TokenRequest validation). */
export const MIN_TOKEN_SECONDS = 600;

interface StoredToken {
  readonly token: string;
  readonly issuedMs: number;
  readonly expiresMs: number;
  /** When a new one is asked for (before it expires, if it expires before the lease). */
  readonly refreshAtMs: number;
  /** The anchor Secret it is bound to: a new Secret (another uid) means a dead token. */
  readonly secretUid: string;
}

/**
 * When to ask for a new token: never, if this one lives until the lease
 * ends; otherwise once 80% of its life has passed.
 */
export function refreshTime(issuedMs: number, expiresMs: number, leaseEndMs: number): number {
  if (expiresMs >= leaseEndMs) return Number.POSITIVE_INFINITY;
  return issuedMs + Math.floor((expiresMs - issuedMs) * 0.8);
}

/** Seconds asked for: until the lease ends (D28), at least the API server's minimum. */
export function tokenSeconds(nowMs: number, leaseEndMs: number): number {
  return Math.max(MIN_TOKEN_SECONDS, Math.floor((leaseEndMs - nowMs) / 1000));
}

function isLeaseSpec(v: unknown, leaseId: string): v is LeaseSpec {
  const l = v as Partial<LeaseSpec> | null;
  return (
    l !== null &&
    typeof l === 'object' &&
    l.leaseId === leaseId &&
    typeof l.namespace === 'string' &&
    typeof l.leaseUser === 'string' &&
    Array.isArray(l.nodes) &&
    typeof l.gpuCount === 'number' &&
    typeof l.startMs === 'number' &&
    typeof l.endMs === 'number' &&
    Array.isArray(l.sshPublicKeys)
  );
}

/** Is every member of `want` in `have` with the same value (arrays: same length, member-wise)? */
export function contains(have: unknown, want: unknown): boolean {
  if (want === null || typeof want !== 'object') return have === want;
  if (Array.isArray(want)) {
    return (
      Array.isArray(have) &&
      have.length === want.length &&
      want.every((w, i) => contains(have[i], w))
    );
  }
  if (have === null || typeof have !== 'object') return false;
  return Object.entries(want).every(([k, w]) =>
    w === undefined ? true : contains((have as Record<string, unknown>)[k], w),
  );
}

/** The existing object with our labels and annotations merged in and our other members set. */
function merged<T extends KubernetesObject>(existing: T, desired: T): T | undefined {
  const { metadata: want, ...body } = desired;
  const have = existing.metadata ?? {};
  if (
    contains(have.labels ?? {}, want?.labels ?? {}) &&
    contains(have.annotations ?? {}, want?.annotations ?? {}) &&
    contains(existing, body)
  ) {
    return undefined;
  }
  return {
    ...existing,
    ...body,
    metadata: {
      ...have,
      labels: { ...have.labels, ...want?.labels },
      annotations: { ...have.annotations, ...want?.annotations },
    },
  };
}

function ref(o: KubernetesObject): ObjectRef {
  return {
    apiVersion: o.apiVersion ?? '',
    kind: o.kind ?? '',
    name: o.metadata?.name ?? '',
    namespace: o.metadata?.namespace,
  };
}

export class KubernetesProvisioner<B extends PodBackend> implements Provisioner<B> {
  readonly kind = 'kubernetes' as const;
  private clusterNodes: ReadonlySet<string> | undefined;
  private readonly backends = new Map<string, NodeAccess<B>[]>();
  private readonly refreshTimers = new Map<string, NodeJS.Timeout>();
  private readonly now: () => number;
  private readonly tokenDir: string;
  /** namespace → lease id, for the admission webhook (a namespace's lease never changes). */
  private readonly namespaceLeases = new Map<string, string>();

  constructor(private readonly o: KubernetesProvisionerOptions<B>) {
    this.now = o.now ?? Date.now;
    this.tokenDir = join(o.stateDir, 'kubernetes', 'tokens');
  }

  setClusterNodes(hostnames: readonly string[]): void {
    this.clusterNodes = new Set(hostnames);
  }

  async provision(lease: LeaseSpec, signal?: AbortSignal): Promise<ProvisionResult<B>> {
    this.check(lease);
    const kube = this.o.kube;
    let changed = false;
    const step = async <T extends KubernetesObject>(
      desired: T,
      update: (existing: T) => T | undefined = (e) => merged(e, desired),
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
    const { token, minted } = await this.token(lease, secret.metadata?.uid ?? '');
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
    // Sessions' exec streams at once (the gateway has closed the sessions).
    const nodes = this.backends.get(leaseId) ?? [];
    this.backends.delete(leaseId);
    await Promise.all(nodes.map(async (n) => n.backend.terminate?.()));
    const timer = this.refreshTimers.get(leaseId);
    if (timer !== undefined) clearTimeout(timer);
    this.refreshTimers.delete(leaseId);
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
      if (s.step === 'release-nodes') await this.releaseNodes(leaseId);
      else if (ours) await this.revocationStep(s, namespace, leaseId, lease);
    }
    this.namespaceLeases.delete(namespace);
    await rm(this.tokenPath(leaseId), { force: true });
  }

  async list(): Promise<Workspace<B>[]> {
    const kube = this.o.kube;
    const namespaces = await kube.list<V1Namespace>('v1', 'Namespace', undefined, LEASE_LABEL);
    const out: Workspace<B>[] = [];
    const seen = new Set<string>();
    for (const ns of namespaces) {
      const leaseId = ns.metadata?.labels?.[LEASE_LABEL] ?? '';
      // Only the namespaces named after their label's lease are ours.
      if (!isId('lse_', leaseId) || ns.metadata?.name !== leaseNamespace(leaseId)) continue;
      seen.add(leaseId);
      this.namespaceLeases.set(leaseNamespace(leaseId), leaseId);
      const lease = this.specOf(ns, leaseId);
      let access: LeaseAccess<B> | undefined;
      const done =
        ns.metadata.annotations?.[PROVISIONED_ANNOTATION] !== undefined &&
        ns.metadata.deletionTimestamp === undefined;
      if (lease !== undefined && done) {
        const stored = await this.readToken(leaseId);
        if (stored !== undefined) {
          access = this.accessOf(lease, stored);
          this.scheduleRefresh(lease, stored);
        }
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

  /** Stops the token refresh timers (the agent is stopping). */
  close(): void {
    for (const t of this.refreshTimers.values()) clearTimeout(t);
    this.refreshTimers.clear();
  }

  private async revocationStep(
    s: Exclude<RevocationStep, { step: 'release-nodes' }>,
    namespace: string,
    leaseId: string,
    lease: LeaseSpec | undefined,
  ): Promise<void> {
    const kube = this.o.kube;
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
              { ...ref(o), apiVersion: s.apiVersion, kind: s.kind, namespace },
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
          // Already being deleted: what was asked for.
          if (statusOf(err)?.code !== 409) throw err;
        }
        return;
    }
  }

  /** Only the labels and taints carrying this lease's id go (a resale keeps the next lease's). */
  private async releaseNodes(leaseId: string): Promise<void> {
    const nodes = await this.o.kube.list<V1Node>('v1', 'Node');
    for (const node of nodes) {
      if (withoutLease(node, leaseId) === undefined) continue;
      await this.o.kube.modify<V1Node>(
        { apiVersion: 'v1', kind: 'Node', name: node.metadata?.name ?? '' },
        (n) => withoutLease(n, leaseId),
      );
    }
  }

  private specOf(ns: V1Namespace, leaseId: string): LeaseSpec | undefined {
    const raw = ns.metadata?.annotations?.[LEASE_SPEC_ANNOTATION];
    if (raw === undefined) return undefined;
    try {
      const parsed: unknown = JSON.parse(raw);
      return isLeaseSpec(parsed, leaseId) ? parsed : undefined;
    } catch {
      return undefined;
    }
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

  /** The stored token when it is still the one to use; otherwise a new one (TokenRequest). */
  private async token(
    lease: LeaseSpec,
    secretUid: string,
  ): Promise<{ token: StoredToken; minted: boolean }> {
    const stored = await this.readToken(lease.leaseId);
    const now = this.now();
    if (stored !== undefined && stored.secretUid === secretUid && now < stored.refreshAtMs) {
      this.scheduleRefresh(lease, stored);
      return { token: stored, minted: false };
    }
    const request: AuthenticationV1TokenRequest = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: [],
        expirationSeconds: tokenSeconds(now, lease.endMs),
        boundObjectRef: {
          apiVersion: 'v1',
          kind: 'Secret',
          name: NAMES.anchorSecret,
          uid: secretUid,
        },
      },
    };
    const res = await this.o.kube.requestToken(lease.namespace, serviceAccountName(lease), request);
    const value = res.status?.token;
    if (value === undefined || value === '')
      throw new Error('TokenRequest answered without a token');
    // Real servers cap the life (and may extend short ones): what counts is what they answered.
    const exp = res.status?.expirationTimestamp;
    const expiresMs = exp === undefined ? now + MIN_TOKEN_SECONDS * 1000 : new Date(exp).getTime();
    const token: StoredToken = {
      token: value,
      issuedMs: now,
      expiresMs,
      refreshAtMs: refreshTime(now, expiresMs, lease.endMs),
      secretUid,
    };
    await mkdir(this.tokenDir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(
      this.tokenPath(lease.leaseId),
      JSON.stringify({
        ...token,
        refreshAtMs: Number.isFinite(token.refreshAtMs) ? token.refreshAtMs : null,
      }),
    );
    this.scheduleRefresh(lease, token);
    if (expiresMs < lease.endMs) {
      this.o.logger.info(
        { leaseId: lease.leaseId, expiresAt: new Date(expiresMs).toISOString() },
        'lease token ends before the lease: it will be refreshed',
      );
    }
    return { token, minted: true };
  }

  private scheduleRefresh(lease: LeaseSpec, token: StoredToken): void {
    const old = this.refreshTimers.get(lease.leaseId);
    if (old !== undefined) clearTimeout(old);
    this.refreshTimers.delete(lease.leaseId);
    if (!Number.isFinite(token.refreshAtMs) || token.refreshAtMs >= lease.endMs) return;
    const wait = Math.max(0, Math.min(token.refreshAtMs - this.now(), 2 ** 31 - 1));
    const timer = setTimeout(() => {
      this.refreshTimers.delete(lease.leaseId);
      this.o.onAccessChanged?.(lease.leaseId);
    }, wait);
    timer.unref();
    this.refreshTimers.set(lease.leaseId, timer);
  }

  private tokenPath(leaseId: string): string {
    return join(this.tokenDir, `${leaseId}.json`);
  }

  private async readToken(leaseId: string): Promise<StoredToken | undefined> {
    let raw: unknown;
    try {
      raw = await readJsonFile(this.tokenPath(leaseId));
    } catch {
      return undefined; // unreadable: a new one is asked for
    }
    const t = raw as Partial<Omit<StoredToken, 'refreshAtMs'>> & { refreshAtMs?: number | null };
    if (
      t === undefined ||
      typeof t.token !== 'string' ||
      typeof t.issuedMs !== 'number' ||
      typeof t.expiresMs !== 'number' ||
      typeof t.secretUid !== 'string'
    ) {
      return undefined;
    }
    return {
      token: t.token,
      issuedMs: t.issuedMs,
      expiresMs: t.expiresMs,
      refreshAtMs: typeof t.refreshAtMs === 'number' ? t.refreshAtMs : Number.POSITIVE_INFINITY,
      secretUid: t.secretUid,
    };
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

  private accessOf(lease: LeaseSpec, token: StoredToken): LeaseAccess<B> {
    let nodes = this.backends.get(lease.leaseId);
    if (nodes === undefined) {
      nodes = lease.nodes.map((n, i) => ({
        hostname: n.hostname,
        sshUser: n.sshUser,
        nodeIndex: i + 1,
        backend: this.o.backendFactory({
          leaseId: lease.leaseId,
          namespace: lease.namespace,
          nodeIndex: i + 1,
          hostname: n.hostname,
        }),
      }));
      this.backends.set(lease.leaseId, nodes);
    }
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
    return { leaseId: lease.leaseId, nodes, kubeconfig, madeMs: token.issuedMs };
  }
}
