// The Kubernetes provisioner against the Kubernetes API double (issue 13):
// the agent's calls go through its own service account and ClusterRole
// (AGENT_CLUSTER_RULES), RBAC and its escalation check evaluated by the
// double; the exact objects and their order are asserted, revocation
// removes them in order, a crash mid-provisioning and mid-revocation
// converges at the next reconciliation, the lease kubeconfig's token works
// in its namespace only and dies at revocation, the admission webhook
// places the customer's pods, and SSH sessions exec into the workspace pods.

import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex, PassThrough } from 'node:stream';

import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { KubernetesObject, V1Deployment, V1Namespace } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { localWorkspace, planReconciliation } from '../agent/src/leases/reconcile-plan.js';
import { SILENT_LOGGER } from '../agent/src/logger.js';
import type { Logger } from '../agent/src/logger.js';
import type { LeaseSpec } from '../agent/src/provisioner/lease-spec.js';
import { PROVISIONER_CALLS } from '../agent/src/provisioner/kubernetes/calls.js';
import { KubeClient, contains, statusOf } from '../agent/src/provisioner/kubernetes/kube-client.js';
import type { EnsureResult, ObjectRef } from '../agent/src/provisioner/kubernetes/kube-client.js';
import { KubernetesProvisioner } from '../agent/src/provisioner/kubernetes/kubernetes-provisioner.js';
import {
  LEASE_SPEC_ANNOTATION,
  anchorSecretObject,
  leaseTolerations,
  limitRangeObject,
  namespaceObject,
  resourceQuotaObject,
  roleBindingObject,
  roleObject,
  serviceAccountObject,
  workspaceObject,
} from '../agent/src/provisioner/kubernetes/objects.js';
import { PodExecBackend } from '../agent/src/provisioner/kubernetes/pod-exec-backend.js';
import type { LeaseAccess } from '../agent/src/provisioner/provisioner.js';
import { AdmissionWebhookServer } from '../agent/src/provisioner/kubernetes/webhook-server.js';
import type { ExecHandle, SessionExit, ShellHandle } from '../agent/src/ssh/index.js';
import { signServingCert, startK8sDouble } from './k8s-double/index.js';
import type { K8sDouble, KObject, RecordedRequest } from './k8s-double/index.js';
import {
  AGENT_NAMESPACE,
  AGENT_USER,
  putAgentIdentity,
  putGpuNodes,
  putPlacementWebhook,
} from './support/k8s-cluster.js';

const NODES = ['node-a', 'node-b', 'node-c', 'node-d', 'node-e', 'node-f'];
const WORKSPACE = { image: 'nvidia/cuda:12.4.1-base-ubuntu22.04', command: 'sleep infinity' };

let double: K8sDouble;
let stateDir: string;
let agentKubeconfig: KubeConfig;
let webhook: AdmissionWebhookServer;
let leaseCounter = 0;

function leaseOf(nodes: string[], hours = 2): LeaseSpec {
  const n = String(++leaseCounter).padStart(4, '0');
  const leaseId = `lse_01jdq3m5x0k8s${n}aaaaaaaaa`;
  const user = leaseId.replace(/_/g, '-');
  const now = Date.now();
  return {
    leaseId,
    namespace: `gpux-${user}`,
    leaseUser: user,
    nodes: nodes.map((hostname, i) => ({ hostname, sshUser: `${user}-${i + 1}` })),
    gpuCount: 8 * nodes.length,
    startMs: now - 1_000,
    endMs: now + hours * 3_600_000,
    sshPublicKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK8s buyer'],
    sourceLeaseId: null,
  };
}

function provisioner(
  kube: KubeClient = new KubeClient(agentKubeconfig),
  extra: { now?: () => number; logger?: Logger } = {},
): KubernetesProvisioner {
  const p = new KubernetesProvisioner({
    kube,
    clusterId: 'cls_01jdq3m5x0aaaaaaaaaaaaaaaa',
    stateDir,
    publicServer: double.url,
    caPem: double.caPem,
    workspace: WORKSPACE,
    logger: SILENT_LOGGER,
    pollMs: 20,
    scheduleTimeoutMs: 20_000,
    ...extra,
  });
  p.setClusterNodes(NODES);
  return p;
}

/** A write as the agent made it: `POST namespaces gpux-…`, `PUT nodes node-a`, `DELETE pods …`. */
function describeWrite(r: RecordedRequest): string {
  const body = r.body as KubernetesObject | undefined;
  const name = r.name || body?.metadata?.name || '';
  const sub = r.subresource ? `/${r.subresource}` : '';
  return `${r.method} ${r.resource ?? r.path}${sub} ${name}`;
}

function agentWritesSince(seq: number): RecordedRequest[] {
  return double.requests.filter(
    (r) => r.seq > seq && r.user === AGENT_USER && r.method !== 'GET' && r.status < 300,
  );
}

const lastSeq = (): number => double.requests.at(-1)?.seq ?? 0;

/** The client's model objects (`_from`) as the API has them (`from`). */
function wire(o: unknown): unknown {
  return JSON.parse(JSON.stringify(o).replace(/"_from":/g, '"from":'));
}

function stored(o: KubernetesObject): KObject | undefined {
  return double.get(
    o.apiVersion ?? '',
    o.kind ?? '',
    o.metadata?.namespace ?? '',
    o.metadata?.name ?? '',
  );
}

function leaseClient(kubeconfig: string): { core: CoreV1Api; apps: AppsV1Api } {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfig);
  return { core: kc.makeApiClient(CoreV1Api), apps: kc.makeApiClient(AppsV1Api) };
}

async function codeOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 200;
  } catch (err) {
    return statusOf(err)?.code ?? -1;
  }
}

function exitOf(h: { onExit(l: (e: SessionExit) => void): void }): Promise<SessionExit> {
  return new Promise((resolve) => h.onExit(resolve));
}

async function runExec(h: ExecHandle): Promise<{ out: string; err: string; exit: SessionExit }> {
  let out = '';
  let err = '';
  h.stdout.on('data', (d: Buffer) => (out += d.toString()));
  h.stderr.on('data', (d: Buffer) => (err += d.toString()));
  h.stdin.end();
  const exit = await exitOf(h);
  return { out, err, exit };
}

/** What SSH sessions of the k-th node (1-based) exec into: its workspace pod (sessions.ts). */
function sessionsOf(access: LeaseAccess, k = 1): PodExecBackend {
  const target = access.nodes[k - 1]?.workspace;
  if (target?.kind !== 'pod') throw new Error(`node ${k} has no workspace pod`);
  return new PodExecBackend(target);
}

/** The reconciliation's decision (D30) from what the provisioner lists now. */
async function reconcilePlan(
  p: KubernetesProvisioner,
  live: LeaseSpec[],
  { status = 'provisioning', reportedAtMs = new Map<string, number>() } = {},
) {
  const workspaces = await p.list();
  return planReconciliation({
    listed: live.map((spec) => ({ spec, status })),
    asOfMs: Date.now(),
    workspaces: workspaces.map(localWorkspace),
    tombstoned: new Set(),
    reportedAtMs,
    listSentAtMs: Date.now(),
    nowMs: Date.now(),
  });
}

function nodeLease(name: string): { label: string | undefined; taints: unknown[] } {
  const n = double.get('v1', 'Node', '', name);
  const taints = ((n?.['spec'] as { taints?: { key: string }[] } | undefined)?.taints ?? []).filter(
    (t) => t.key === 'gpux.io/lease',
  );
  return { label: n?.metadata.labels?.['gpux.io/lease'], taints };
}

/** A KubeClient that dies (like the agent's process) at the n-th write of a kind. */
class CrashingKube extends KubeClient {
  private count = 0;
  constructor(
    config: KubeConfig,
    private readonly at: { op: 'ensure' | 'delete' | 'modify'; n: number },
  ) {
    super(config);
  }
  private tick(op: string): void {
    if (op === this.at.op && ++this.count >= this.at.n) throw new Error('agent crashed');
  }
  override async ensure<T extends KubernetesObject>(
    desired: T,
    update: (existing: T) => T | undefined,
  ): Promise<EnsureResult<T>> {
    this.tick('ensure');
    return super.ensure(desired, update);
  }
  override async delete(ref: ObjectRef, options = {}): Promise<boolean> {
    this.tick('delete');
    return super.delete(ref, options);
  }
  override async modify<T extends KubernetesObject>(
    ref: ObjectRef,
    change: (existing: T) => T | undefined,
  ): Promise<EnsureResult<T> | undefined> {
    this.tick('modify');
    return super.modify(ref, change);
  }
}

beforeAll(async () => {
  double = await startK8sDouble({});
  stateDir = mkdtempSync(join(tmpdir(), 'gpux-k8sprov-'));
  putGpuNodes(double, NODES);
  // The agent's own identity: a service account bound to AGENT_CLUSTER_RULES (deploy/agent).
  agentKubeconfig = new KubeConfig();
  agentKubeconfig.loadFromString(putAgentIdentity(double));

  // The agent's admission webhook, registered as deploy/agent registers it.
  const serving = signServingCert(double.certs, ['127.0.0.1']);
  const placer = provisioner();
  webhook = new AdmissionWebhookServer({
    host: '127.0.0.1',
    port: 0,
    certPem: Buffer.from(serving.certPem),
    keyPem: Buffer.from(serving.keyPem),
    leaseOfNamespace: (ns) => placer.leaseOfNamespace(ns),
    logger: SILENT_LOGGER,
  });
  const { port } = await webhook.start();
  putPlacementWebhook(double, port);
});

afterAll(async () => {
  await webhook?.close();
  await double?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

describe('the kubernetes provisioner against the API double (issue 13)', () => {
  it('provisions a lease: the exact objects in order, nodes labelled and tainted, workspace pods scheduled', async () => {
    const lease = leaseOf(['node-a', 'node-b']);
    const p = provisioner();
    const since = lastSeq();
    const { access, changed } = await p.provision(lease);
    expect(changed).toBe(true);
    const ns = lease.namespace;
    expect(agentWritesSince(since).map(describeWrite)).toEqual([
      `POST namespaces ${ns}`,
      'POST resourcequotas gpux-lease',
      'POST limitranges gpux-lease',
      'POST networkpolicies gpux-lease-isolation',
      'PUT nodes node-a',
      'PUT nodes node-b',
      `POST serviceaccounts ${lease.leaseUser}`,
      'POST roles gpux-lease',
      'POST rolebindings gpux-lease',
      'POST secrets gpux-lease-token-anchor',
      `POST serviceaccounts/token ${lease.leaseUser}`,
      'POST deployments workspace-1',
      'POST deployments workspace-2',
      `PUT namespaces ${ns}`,
    ]);
    for (const o of [
      namespaceObject(lease),
      resourceQuotaObject(lease),
      limitRangeObject(lease),
      serviceAccountObject(lease),
      roleObject(lease),
      roleBindingObject(lease),
      anchorSecretObject(lease),
      workspaceObject(lease, 1, WORKSPACE),
      workspaceObject(lease, 2, WORKSPACE),
    ]) {
      const { metadata, ...body } = wire(o) as KubernetesObject;
      const s = stored(o);
      expect(s, `${o.kind} ${metadata?.name ?? ''}`).toBeDefined();
      expect(contains(s, body), `${o.kind} ${metadata?.name ?? ''}`).toBe(true);
      expect(s?.metadata.labels?.['gpux.io/lease']).toBe(lease.leaseId);
    }
    const np = double.get('networking.k8s.io/v1', 'NetworkPolicy', ns, 'gpux-lease-isolation');
    expect(np?.['spec']).toMatchObject({ ingress: [{ from: [{ podSelector: {} }] }] });
    expect(
      double.get('v1', 'Namespace', '', ns)?.metadata.annotations?.['gpux.io/provisioned-at'],
    ).toBeDefined();
    for (const n of ['node-a', 'node-b']) {
      expect(nodeLease(n)).toEqual({
        label: lease.leaseId,
        taints: [{ key: 'gpux.io/lease', value: lease.leaseId, effect: 'NoSchedule' }],
      });
    }
    // The token asked for ends with the lease (D28).
    const tokenRequest = double.requests.find((r) => r.seq > since && r.subresource === 'token')
      ?.body as {
      spec: { expirationSeconds: number; boundObjectRef: { kind: string; name: string } };
    };
    expect(tokenRequest.spec.boundObjectRef).toMatchObject({
      kind: 'Secret',
      name: 'gpux-lease-token-anchor',
    });
    expect(tokenRequest.spec.expirationSeconds * 1000).toBeLessThanOrEqual(
      lease.endMs - since * 0 - Date.now() + 60_000,
    );
    // One workspace pod per node, on that node, with its 8 GPUs.
    const pods = double.list('v1', 'Pod', ns);
    expect(pods.map((p) => (p['spec'] as { nodeName?: string }).nodeName).sort()).toEqual([
      'node-a',
      'node-b',
    ]);
    expect(access.nodes.map((n) => [n.hostname, n.sshUser, n.nodeIndex])).toEqual([
      ['node-a', `${lease.leaseUser}-1`, 1],
      ['node-b', `${lease.leaseUser}-2`, 2],
    ]);
    expect(access.kubeconfig).toContain(`server: ${double.url}`);

    // Listed as provisioned, with the lease as it was provisioned.
    const w = (await p.list()).find((x) => x.leaseId === lease.leaseId);
    expect(w?.lease).toEqual(lease);
    expect(w?.access?.kubeconfig).toBe(access.kubeconfig);
    // A second provision (an event delivered again) writes nothing and gives the same access.
    const again = lastSeq();
    const second = await p.provision(lease);
    expect(second.changed).toBe(false);
    expect(second.access.kubeconfig).toBe(access.kubeconfig);
    expect(agentWritesSince(again)).toEqual([]);

    await p.revoke(lease.leaseId);
  });

  it('the lease kubeconfig works in its namespace only, and revocation removes everything in order', async () => {
    const lease = leaseOf(['node-c']);
    const p = provisioner();
    const { access } = await p.provision(lease);
    const { core, apps } = leaseClient(access.kubeconfig);
    expect(await codeOf(core.listNamespacedPod({ namespace: lease.namespace }))).toBe(200);
    expect(await codeOf(apps.listNamespacedDeployment({ namespace: lease.namespace }))).toBe(200);
    expect(await codeOf(core.listNamespacedPod({ namespace: 'default' }))).toBe(403);
    expect(await codeOf(core.listNamespacedPod({ namespace: AGENT_NAMESPACE }))).toBe(403);
    expect(await codeOf(core.listNode())).toBe(403);
    expect(await codeOf(core.listNamespace())).toBe(403);

    // A pod of the customer's own, which no controller owns.
    await core.createNamespacedPod({
      namespace: lease.namespace,
      body: {
        metadata: { name: 'notebook' },
        spec: { containers: [{ name: 'c', image: 'jupyter' }] },
      },
    });
    const since = lastSeq();
    await p.revoke(lease.leaseId);
    const writes = agentWritesSince(since);
    const kinds = writes.map((r) => r.resource).filter((r, i, all) => r !== all[i - 1]);
    expect(kinds).toEqual([
      'rolebindings',
      'secrets',
      'serviceaccounts',
      'resourcequotas',
      'deployments',
      ...(kinds.includes('replicasets') ? ['replicasets'] : []),
      'pods',
      'namespaces',
      'nodes',
    ]);
    expect(writes.find((r) => r.resource === 'resourcequotas')?.body).toMatchObject({
      spec: { hard: { pods: '0' } },
    });
    for (const r of writes.filter((w) => w.resource === 'pods')) {
      const grace =
        /gracePeriodSeconds=0/.test(r.query) ||
        (r.body as { gracePeriodSeconds?: number } | undefined)?.gracePeriodSeconds === 0;
      expect(grace, r.query).toBe(true);
    }
    expect(double.get('v1', 'Namespace', '', lease.namespace)).toBeUndefined();
    expect(nodeLease('node-c')).toEqual({ label: undefined, taints: [] });
    // The token died with its Secret and ServiceAccount (D28).
    expect(await codeOf(core.listNamespacedPod({ namespace: lease.namespace }))).toBe(401);
    expect(await p.list()).toEqual([]);
    // Revoking again changes nothing (404 on delete is success).
    const again = lastSeq();
    await p.revoke(lease.leaseId);
    expect(agentWritesSince(again)).toEqual([]);
  });

  it("the webhook puts the customer's pods on the lease's nodes whatever they asked for", async () => {
    const lease = leaseOf(['node-d']);
    const p = provisioner();
    const { access } = await p.provision(lease);
    const { core, apps } = leaseClient(access.kubeconfig);
    // Scale the workspace away to have the GPUs for their own pod.
    const d = await apps.readNamespacedDeployment({
      name: 'workspace-1',
      namespace: lease.namespace,
    });
    await apps.replaceNamespacedDeployment({
      name: 'workspace-1',
      namespace: lease.namespace,
      body: { ...d, spec: { ...(d.spec as NonNullable<V1Deployment['spec']>), replicas: 0 } },
    });
    await core.createNamespacedPod({
      namespace: lease.namespace,
      body: {
        metadata: { name: 'trainer' },
        spec: {
          containers: [
            {
              name: 'c',
              image: 'pytorch/pytorch',
              resources: { limits: { 'nvidia.com/gpu': '8' } },
            },
          ],
          nodeSelector: { pool: 'someone-elses' },
          tolerations: [{ operator: 'Exists' }],
        },
      },
    });
    const pod = double.get('v1', 'Pod', lease.namespace, 'trainer');
    const spec = pod?.['spec'] as {
      nodeSelector: unknown;
      tolerations: unknown;
      nodeName?: string;
    };
    expect(spec.nodeSelector).toEqual({ 'gpux.io/lease': lease.leaseId });
    expect(spec.tolerations).toEqual(wire(leaseTolerations(lease.leaseId)));
    expect(spec.nodeName).toBe('node-d');

    // SSH now says the workspace was scaled away, at once; reconciliation does not scale it back.
    const backend = sessionsOf(access);
    const r = await runExec(await backend.exec({ env: {}, command: 'echo hi' }));
    expect(r.exit).toEqual({ code: 69 });
    expect(r.err).toContain('workspace scaled to zero');
    await p.provision(lease);
    expect(
      (
        double.get('apps/v1', 'Deployment', lease.namespace, 'workspace-1')?.['spec'] as {
          replicas: number;
        }
      ).replicas,
    ).toBe(0);
    await p.revoke(lease.leaseId);
    expect(double.get('v1', 'Pod', lease.namespace, 'trainer')).toBeUndefined();
  });

  it('SSH sessions exec into the workspace pod: commands with their status, a shell with a TTY', async () => {
    const lease = leaseOf(['node-e']);
    const p = provisioner();
    const { access } = await p.provision(lease);
    const backend = sessionsOf(access);
    const r = await runExec(
      await backend.exec({
        env: { LANG: 'C.UTF-8' },
        command: 'echo "hello $LANG"; echo oops >&2; exit 4',
      }),
    );
    expect(r).toEqual({ out: 'hello C.UTF-8\n', err: 'oops\n', exit: { code: 4 } });

    // An SSH client that reads slower than the pod writes: reading the exec
    // stops while its output waits, and every byte still arrives, in order.
    const big = await backend.exec({ env: {}, command: 'seq 1 200000' });
    big.stdin.end();
    const bigOut = big.stdout as PassThrough;
    const held = (): number => bigOut.readableLength + bigOut.writableLength;
    while (held() < 16 * 1024) await new Promise((r) => setTimeout(r, 10));
    // Left unread a while: what waits here stays near the streams' high-water
    // marks (the 1.3 MB of output stays in the pod), instead of all of it.
    await new Promise((r) => setTimeout(r, 300));
    expect(held()).toBeLessThan(256 * 1024);
    const slow = await runExec(big);
    const expected = Array.from({ length: 200_000 }, (_, i) => `${i + 1}\n`).join('');
    expect(slow.exit).toEqual({ code: 0 });
    expect(slow.out.length).toBe(expected.length);
    expect(slow.out === expected).toBe(true);

    const shell: ShellHandle = await backend.shell({
      term: 'xterm',
      cols: 100,
      rows: 30,
      env: {},
      command: 'test -t 0 && echo on-a-tty; exit 7',
    });
    let out = '';
    shell.onData((d) => (out += d.toString()));
    expect(await exitOf(shell)).toEqual({ code: 7 });
    expect(out).toContain('on-a-tty');

    // Revocation ends open sessions at once: the agent ends what they left
    // running (the gateway has closed the sessions), then the lease's objects.
    const long = await backend.exec({ env: {}, command: 'sleep 60' });
    const ended = exitOf(long);
    await backend.terminate();
    expect((await ended).code).not.toBe(0);
    await p.revoke(lease.leaseId);
  });

  it('ssh -L is a port-forward into the workspace pod: its own ports only, closed when nothing listens', async () => {
    const lease = leaseOf(['node-e']);
    const p = provisioner();
    const { access } = await p.provision(lease);
    const backend = sessionsOf(access);
    // A server in the pod: the double's pods share this machine's loopback.
    const server = createServer((c) => {
      c.once('data', (d: Buffer) => c.end(`pod got ${d.toString()}`));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    const readAll = async (s: Duplex): Promise<string> => {
      let out = '';
      s.on('error', () => undefined);
      s.on('data', (d: Buffer) => (out += d.toString()));
      await new Promise((resolve) => s.on('close', resolve));
      return out;
    };
    for (const host of ['localhost', '127.0.0.1']) {
      const r = await backend.forward(host, port);
      if (!r.ok) throw new Error(r.reason);
      r.socket.write('ping');
      expect(await readAll(r.socket)).toBe('pod got ping');
    }
    const forwards = double
      .calls()
      .filter(
        (c) => c.startsWith('create pods/portforward ') && c.includes(` ${lease.namespace}/`),
      );
    expect(forwards).toHaveLength(2);
    // Another host is refused before anything is asked of the API.
    expect(await backend.forward('192.0.2.1', 80)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/own ports/) as string,
    });
    // Nothing listens: the API's error channel says so and the forward closes without data.
    server.close();
    await once(server, 'close');
    const refused = await backend.forward('localhost', port);
    if (!refused.ok) throw new Error(refused.reason);
    let failure: Error | undefined;
    refused.socket.on('error', (err) => (failure = err));
    expect(await readAll(refused.socket)).toBe('');
    expect(failure?.message).toMatch(new RegExp(`error forwarding port ${port}`));
    // Revocation ends open forwards at once.
    const again = createServer(() => undefined).listen(port, '127.0.0.1');
    await once(again, 'listening');
    const open = await backend.forward('localhost', port);
    if (!open.ok) throw new Error(open.reason);
    open.socket.on('error', () => undefined);
    const ended = new Promise((resolve) => open.socket.on('close', resolve));
    await backend.terminate(); // what revocation does first, the pod still running
    await ended;
    await p.revoke(lease.leaseId);
    again.close();
  });

  it('a crash mid-provisioning converges at the next reconciliation, either way', async () => {
    // Still live: provisioned from where it stopped.
    const lease = leaseOf(['node-f']);
    await expect(
      provisioner(new CrashingKube(agentKubeconfig, { op: 'ensure', n: 6 })).provision(lease),
    ).rejects.toThrow('agent crashed');
    expect(double.get('v1', 'Namespace', '', lease.namespace)).toBeDefined();
    const restarted = provisioner();
    const plan = await reconcilePlan(restarted, [lease]);
    expect(plan.provision.map((l) => l.leaseId)).toEqual([lease.leaseId]);
    expect(plan.revoke.filter((r) => r.leaseId === lease.leaseId)).toEqual([]);
    const { access } = await restarted.provision(plan.provision[0]!);
    expect(stored(roleBindingObject(lease))).toBeDefined();
    expect(double.list('v1', 'Pod', lease.namespace)).toHaveLength(1);
    const { core } = leaseClient(access.kubeconfig);
    expect(await codeOf(core.listNamespacedPod({ namespace: lease.namespace }))).toBe(200);
    await restarted.revoke(lease.leaseId);

    // Ended meanwhile: revoked, nothing left.
    const gone = leaseOf(['node-f']);
    await expect(
      provisioner(new CrashingKube(agentKubeconfig, { op: 'modify', n: 1 })).provision(gone),
    ).rejects.toThrow('agent crashed');
    const plan2 = await reconcilePlan(provisioner(), []);
    expect(plan2.revoke.map((r) => r.leaseId)).toContain(gone.leaseId);
    await provisioner().revoke(gone.leaseId);
    expect(double.get('v1', 'Namespace', '', gone.namespace)).toBeUndefined();
    expect((await reconcilePlan(provisioner(), [])).revoke.map((r) => r.leaseId)).not.toContain(
      gone.leaseId,
    );
  });

  it('a crash mid-revocation converges at the next reconciliation', async () => {
    const lease = leaseOf(['node-a', 'node-b']);
    const { access } = await provisioner().provision(lease);
    // Dies after the binding, the secret and the service account went: the token is dead already.
    await expect(
      provisioner(new CrashingKube(agentKubeconfig, { op: 'delete', n: 4 })).revoke(lease.leaseId),
    ).rejects.toThrow('agent crashed');
    const { core } = leaseClient(access.kubeconfig);
    expect(await codeOf(core.listNamespacedPod({ namespace: lease.namespace }))).toBe(401);
    const plan = await reconcilePlan(provisioner(), []);
    expect(plan.revoke.map((r) => r.leaseId)).toContain(lease.leaseId);
    await provisioner().revoke(lease.leaseId);
    expect(double.get('v1', 'Namespace', '', lease.namespace)).toBeUndefined();
    expect(nodeLease('node-a')).toEqual({ label: undefined, taints: [] });

    // Dies after the namespace went, before the nodes were released: found by its node labels.
    const second = leaseOf(['node-a']);
    await provisioner().provision(second);
    await expect(
      provisioner(new CrashingKube(agentKubeconfig, { op: 'modify', n: 1 })).revoke(second.leaseId),
    ).rejects.toThrow('agent crashed');
    expect(double.get('v1', 'Namespace', '', second.namespace)).toBeUndefined();
    expect(nodeLease('node-a').label).toBe(second.leaseId);
    const plan2 = await reconcilePlan(provisioner(), []);
    expect(plan2.revoke.map((r) => r.leaseId)).toContain(second.leaseId);
    await provisioner().revoke(second.leaseId);
    expect(nodeLease('node-a')).toEqual({ label: undefined, taints: [] });
  });

  it("a resale: the former lease's revocation leaves the next lease's labels and taints", async () => {
    const first = leaseOf(['node-b']);
    const p = provisioner();
    await p.provision(first);
    const next = { ...leaseOf(['node-b']), sourceLeaseId: first.leaseId };
    // The next lease waits for the GPUs its workspace needs until the first one's pods are gone.
    const provisioning = p.provision(next);
    await p.revoke(first.leaseId);
    await provisioning;
    expect(nodeLease('node-b')).toEqual({
      label: next.leaseId,
      taints: [{ key: 'gpux.io/lease', value: next.leaseId, effect: 'NoSchedule' }],
    });
    expect(
      double
        .list('v1', 'Pod', next.namespace)
        .map((x) => (x['spec'] as { nodeName: string }).nodeName),
    ).toEqual(['node-b']);
    await p.revoke(next.leaseId);
    expect(nodeLease('node-b')).toEqual({ label: undefined, taints: [] });
  });

  it('never touches a namespace that is not labelled for the lease (D30)', async () => {
    const lease = leaseOf(['node-e']);
    double.put({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: lease.namespace, labels: { team: 'ops' } },
    });
    double.put({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'keep', namespace: lease.namespace },
      data: {},
    });
    const p = provisioner();
    const since = lastSeq();
    expect((await p.list()).map((w) => w.leaseId)).not.toContain(lease.leaseId);
    await expect(p.provision(lease)).rejects.toMatchObject({
      name: 'ProvisionError',
      permanent: true,
    });
    await p.revoke(lease.leaseId);
    expect(
      agentWritesSince(since).filter(
        (r) => r.namespace === lease.namespace || r.name === lease.namespace,
      ),
    ).toEqual([]);
    const labels = double.get('v1', 'Namespace', '', lease.namespace)?.metadata.labels;
    expect(labels).toMatchObject({ team: 'ops' });
    expect(labels?.['gpux.io/lease']).toBeUndefined();
    expect(double.get('v1', 'ConfigMap', lease.namespace, 'keep')).toBeDefined();
  });

  it('health and GPU inventory come from Node status', async () => {
    const p = provisioner();
    p.setClusterNodes(['node-a', 'missing']);
    const h = await p.health();
    expect(h[0]).toMatchObject({ hostname: 'node-a', healthy: true, problem: '' });
    expect(h[0]?.gpus).toHaveLength(8);
    expect(h[1]).toEqual({
      hostname: 'missing',
      healthy: false,
      problem: 'no Kubernetes node named missing',
      gpus: [],
    });
  });

  it('a token the server caps before the lease end is due for refresh; provisioning then mints the new kubeconfig (D28)', async () => {
    const lease = leaseOf(['node-c'], 48); // longer than the double's 24 h cap
    let offsetMs = 0;
    const p = provisioner(new KubeClient(agentKubeconfig), { now: () => Date.now() + offsetMs });
    const first = await p.provision(lease);
    expect(first.access.kubeconfig).toMatch(/token expires at/);
    // Due at 80% of the token's life (the agent's lease queue provisions it again then).
    const due = first.access.refreshAtMs;
    expect(due).toBeDefined();
    expect(due).toBeLessThan(lease.endMs);
    expect((await p.list()).find((w) => w.leaseId === lease.leaseId)?.access?.refreshAtMs).toBe(
      due,
    );
    // Before then, provisioning again changes nothing.
    expect((await p.provision(lease)).changed).toBe(false);
    offsetMs = (due ?? 0) - Date.now() + 1_000;
    const second = await p.provision(lease);
    expect(second.changed).toBe(true);
    expect(second.access.kubeconfig).not.toBe(first.access.kubeconfig);
    expect(second.access.refreshAtMs).toBeGreaterThan(due ?? 0);
    const { core } = leaseClient(second.access.kubeconfig);
    expect(await codeOf(core.listNamespacedPod({ namespace: lease.namespace }))).toBe(200);
    await p.revoke(lease.leaseId);
    expect(await codeOf(core.listNamespacedPod({ namespace: lease.namespace }))).toBe(401);
  });

  it('an unreadable token file or lease record is logged and provisioned anew, never trusted', async () => {
    const warned: string[] = [];
    const logger: Logger = {
      ...SILENT_LOGGER,
      warn: (_o: object | string, msg?: string) => void warned.push(msg ?? ''),
    };
    const lease = leaseOf(['node-a']);
    const p = provisioner(new KubeClient(agentKubeconfig), { logger });
    const first = await p.provision(lease);
    writeFileSync(join(stateDir, 'kubernetes', 'tokens', `${lease.leaseId}.json`), '{"token":');
    await new KubeClient(agentKubeconfig).modify<V1Namespace>(
      { apiVersion: 'v1', kind: 'Namespace', name: lease.namespace },
      (n) => ({
        ...n,
        metadata: {
          ...n.metadata,
          annotations: { ...n.metadata?.annotations, [LEASE_SPEC_ANNOTATION]: '{not json' },
        },
      }),
    );
    // Listed unfinished, lease unknown: reconciliation provisions it again (or revokes it).
    const w = (await p.list()).find((x) => x.leaseId === lease.leaseId);
    expect(w).toEqual({ leaseId: lease.leaseId, lease: undefined, access: undefined });
    expect(warned).toEqual([`the lease record on namespace ${lease.namespace} is not JSON`]);
    const again = await p.provision(lease);
    expect(warned.at(-1)).toBe('lease token file unreadable; a new token is asked for');
    expect(again.changed).toBe(true);
    expect(again.access.kubeconfig).not.toBe(first.access.kubeconfig);
    expect((await p.list()).find((x) => x.leaseId === lease.leaseId)?.lease).toEqual(lease);
    await p.revoke(lease.leaseId);
  });

  it('a refreshed token whose report a restart cut off is reported at the next reconciliation (D28, D30)', async () => {
    const lease = leaseOf(['node-d'], 48); // longer than the double's 24 h cap
    let offsetMs = 0;
    const now = () => Date.now() + offsetMs;
    const first = await provisioner(new KubeClient(agentKubeconfig), { now }).provision(lease);
    const reportedAtMs = new Map([[lease.leaseId, now()]]); // the exchange took the first kubeconfig
    // 80% of the token's life later a new one is minted and stored, and the
    // agent stops before its report: the exchange still serves the old token.
    offsetMs = 20 * 3_600_000;
    const refreshed = await provisioner(new KubeClient(agentKubeconfig), { now }).provision(lease);
    expect(refreshed.changed).toBe(true);
    expect(refreshed.access.kubeconfig).not.toBe(first.access.kubeconfig);
    const restarted = provisioner(new KubeClient(agentKubeconfig), { now });
    const plan = await reconcilePlan(restarted, [lease], { status: 'active', reportedAtMs });
    expect(plan.stale.map((l) => l.leaseId)).toEqual([lease.leaseId]);
    expect(plan.report).toEqual([]);
    // What the restarted agent reports is the stored new token, not another one.
    const again = await restarted.provision(lease);
    expect(again.changed).toBe(false);
    expect(again.access.kubeconfig).toBe(refreshed.access.kubeconfig);
    // Once that report is answered, nothing more is sent.
    const answered = new Map([[lease.leaseId, now()]]);
    const after = await reconcilePlan(restarted, [lease], {
      status: 'active',
      reportedAtMs: answered,
    });
    expect(after.stale).toEqual([]);
    await restarted.revoke(lease.leaseId);
  });

  it('every call the agent made is in PROVISIONER_CALLS and allowed by its ClusterRole', () => {
    const made = double.requests.filter(
      (r) => r.user === AGENT_USER && r.verb !== undefined && r.resource !== undefined,
    );
    expect(made.length).toBeGreaterThan(0);
    const allowed = new Set(PROVISIONER_CALLS.map((c) => `${c.verb} ${c.group}/${c.resource}`));
    const outside = made
      .map(
        (r) =>
          `${r.verb ?? ''} ${r.group ?? ''}/${r.resource ?? ''}${r.subresource ? `/${r.subresource}` : ''}`,
      )
      .filter((c) => !allowed.has(c));
    expect([...new Set(outside)]).toEqual([]);
    expect(made.filter((r) => r.status === 403).map(describeWrite)).toEqual([]);
  });
});
