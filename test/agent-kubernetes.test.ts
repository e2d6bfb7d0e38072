// End to end in Kubernetes mode (issue 13): the agent process
// (PROVISIONER=kubernetes) against the exchange's gRPC double and the
// Kubernetes API double. Its heartbeat reports health and GPUs from Node
// status; a lease's provision event becomes a namespace with its workspace
// pod; the real OpenSSH client runs a command in that pod through the
// agent's gateway; the real kubectl with the reported kubeconfig works in
// the lease's namespace only; the revoke event closes the open session at
// once, removes the namespace and kills the token. The revocation time is
// printed (against the double: no scheduling, no image pull).

import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ExchangeDouble } from './agent-exchange-double.js';
import { startAgentProcess } from './support/agent-process.js';
import type { AgentProcess } from './support/agent-process.js';
import type { K8sDouble } from './k8s-double/index.js';
import { K8sCluster } from './support/k8s-cluster.js';
import { kubectlIn } from './support/kubectl.js';
import {
  makeSshKey,
  openSession,
  parseEndpoint,
  runSsh,
  writeKnownHosts,
} from './support/ssh-client.js';
import type { SshKey, SshTarget } from './support/ssh-client.js';
import { untilWith } from './support/until.js';

const NATS_URL = process.env['GPUX_TEST_NATS_URL'] ?? 'nats://127.0.0.1:4222';
const scratch = realpathSync(mkdtempSync(join(tmpdir(), 'gpux-agent-k8s-')));
const stateDir = join(scratch, 'state');
const NODE = 'gpu-k8s-1';
const kubectl = kubectlIn(scratch);

let exchange: ExchangeDouble;
let k8s: K8sDouble;
let agent: AgentProcess | undefined;
let cluster: K8sCluster;
let key: SshKey;

const output = (): string => agent?.output() ?? '';
const until = untilWith({ output });

beforeAll(async () => {
  key = makeSshKey(scratch, 'buyer');
  exchange = new ExchangeDouble({ natsUrl: NATS_URL, ackWaitMs: 1_500 });
  await exchange.start();
  cluster = await K8sCluster.start([NODE]);
  k8s = cluster.double;
});

afterAll(async () => {
  await agent?.stop('SIGKILL');
  await exchange?.close();
  await cluster?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('the agent in kubernetes mode, end to end', () => {
  it('buy → SSH into the workspace pod, kubectl in the namespace → terminate → session closed, token dead', async () => {
    const clusterId = await exchange.addCluster([NODE]);
    agent = await startAgentProcess({
      ...exchange.agentSettings(clusterId, stateDir),
      ...cluster.agentEnv,
      HOME: scratch,
    });
    await until('a heartbeat', () => exchange.of('heartbeat', clusterId).length > 0);
    // Health and GPUs from Node status, not nvidia-smi.
    const beat = exchange.of('heartbeat', clusterId).at(-1) as {
      nodes: { hostname: string; healthy: boolean; gpus: { name: string }[] }[];
    };
    expect(beat.nodes).toHaveLength(1);
    expect(beat.nodes[0]).toMatchObject({ hostname: NODE, healthy: true });
    expect(beat.nodes[0]?.gpus.map((g) => g.name)).toEqual(Array(8).fill('NVIDIA-H100-80GB-HBM3'));

    const lease = exchange.addLease(clusterId, [NODE], [key.publicKey]);
    await exchange.publish(lease);
    await until(
      'ReportProvisioned',
      () => exchange.of('reportProvisioned', clusterId).length === 1,
    );
    const report = exchange.of('reportProvisioned', clusterId)[0] as {
      sshEndpoints: { endpoint: string }[];
      sshHostKeys: string[];
      kubeconfig: string;
    };
    const pods = k8s.list('v1', 'Pod', lease.namespace);
    expect(pods.map((p) => (p['spec'] as { nodeName?: string }).nodeName)).toEqual([NODE]);

    const endpoint = parseEndpoint(report.sshEndpoints[0]?.endpoint ?? '');
    const target: SshTarget = {
      endpoint,
      key,
      knownHosts: writeKnownHosts(join(scratch, 'known_hosts'), endpoint, report.sshHostKeys),
    };
    const login = await runSsh(target, 'echo in-the-workspace; exit 3');
    expect(login, output()).toMatchObject({ code: 3, stdout: 'in-the-workspace\n' });

    // The reported kubeconfig with the real kubectl: its namespace only.
    expect(
      await kubectl(report.kubeconfig, 'get', 'pods', '-n', lease.namespace, '-o', 'name'),
    ).toMatchObject({ code: 0 });
    const canI = await kubectl(
      report.kubeconfig,
      'auth',
      'can-i',
      'create',
      'pods',
      '-n',
      lease.namespace,
    );
    expect(canI.stdout.trim()).toBe('yes');
    expect((await kubectl(report.kubeconfig, 'get', 'pods', '-n', 'gpux-system')).code).not.toBe(0);
    expect((await kubectl(report.kubeconfig, 'get', 'nodes')).code).not.toBe(0);

    const session = await openSession(target);

    const t0 = performance.now();
    await exchange.publish(exchange.endLease(clusterId, lease.lease_id));
    const closed = await session.ended;
    const sessionClosedMs = performance.now() - t0;
    expect(closed.code).toBe(255);
    expect(closed.stderr).toContain(`gpux: lease ${lease.lease_id} terminated`);
    await until('ReportRevoked', () => exchange.of('reportRevoked', clusterId).length === 1);
    const revokedMs = performance.now() - t0;
    expect(k8s.get('v1', 'Namespace', '', lease.namespace)).toBeUndefined();
    const after = await kubectl(report.kubeconfig, 'get', 'pods', '-n', lease.namespace);
    expect(after.code).not.toBe(0);
    expect(after.stderr).toMatch(/Unauthorized|must be logged in/);
    console.log(
      `kubernetes revocation against the API double: session closed ${sessionClosedMs.toFixed(0)} ms, access gone and reported ${revokedMs.toFixed(0)} ms after the revoke event`,
    );

    expect(await agent.stop('SIGTERM'), output()).toBe(0);
  });
});
