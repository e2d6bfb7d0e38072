// End to end in Kubernetes mode (issue 13): the agent process
// (PROVISIONER=kubernetes) against the exchange's gRPC double and the
// Kubernetes API double. Its heartbeat reports health and GPUs from Node
// status; a lease's provision event becomes a namespace with its workspace
// pod; the real OpenSSH client runs a command in that pod through the
// agent's gateway; the real kubectl with the reported kubeconfig works in
// the lease's namespace only; the revoke event closes the open session at
// once, removes the namespace and kills the token. The revocation time is
// printed (against the double: no scheduling, no image pull).

import { execFile, execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ExchangeDouble } from './agent-exchange-double.js';
import type { K8sDouble } from './k8s-double/index.js';
import { K8sCluster } from './support/k8s-cluster.js';

const MAIN = fileURLToPath(new URL('../agent/dist/main.js', import.meta.url));
const NATS_URL = process.env['GPUX_TEST_NATS_URL'] ?? 'nats://127.0.0.1:4222';
const scratch = realpathSync(mkdtempSync(join(tmpdir(), 'gpux-agent-k8s-')));
const stateDir = join(scratch, 'state');
const key = join(scratch, 'buyer');
const knownHosts = join(scratch, 'known_hosts');
const NODE = 'gpu-k8s-1';

let exchange: ExchangeDouble;
let k8s: K8sDouble;
let agent: ChildProcess | undefined;
let output = '';
let cluster: K8sCluster;
let kubectlRuns = 0;

async function until(what: string, cond: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`gave up waiting for ${what}\n${output}`);
}

function ssh(target: string, port: number, command: string): ChildProcess {
  return spawn('ssh', [
    '-F',
    '/dev/null',
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    `UserKnownHostsFile=${knownHosts}`,
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'IdentityAgent=none',
    '-o',
    'BatchMode=yes',
    '-o',
    'LogLevel=ERROR',
    '-i',
    key,
    '-p',
    String(port),
    target,
    command,
  ]);
}

async function run(
  child: ChildProcess,
): Promise<{ code: number | null; out: string; err: string }> {
  let out = '';
  let err = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (err += b.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, out, err };
}

/** The real kubectl with a kubeconfig and a cold discovery cache (async: the double runs here). */
function kubectl(kubeconfig: string, ...args: string[]): Promise<{ code: number; out: string }> {
  const dir = join(scratch, `kubectl-${++kubectlRuns}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'config'), kubeconfig);
  return new Promise((resolve) => {
    execFile(
      'kubectl',
      args,
      {
        env: {
          PATH: process.env['PATH'] ?? '/usr/bin:/bin',
          HOME: dir,
          KUBECONFIG: join(dir, 'config'),
          KUBECACHEDIR: join(dir, 'cache'),
        },
        timeout: 60_000,
      },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
        resolve({ code, out: stdout + stderr });
      },
    );
  });
}

beforeAll(async () => {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'buyer', '-f', key]);
  exchange = new ExchangeDouble({ natsUrl: NATS_URL, ackWaitMs: 1_500 });
  await exchange.start();
  cluster = await K8sCluster.start([NODE]);
  k8s = cluster.double;
});

afterAll(async () => {
  agent?.kill('SIGKILL');
  await exchange?.close();
  await cluster?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('the agent in kubernetes mode, end to end', () => {
  it('buy → SSH into the workspace pod, kubectl in the namespace → terminate → session closed, token dead', async () => {
    const clusterId = await exchange.addCluster([NODE]);
    agent = spawn(process.execPath, [MAIN], {
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: scratch,
        EXCHANGE_GRPC_URL: exchange.url,
        GPUX_TOKEN: exchange.token,
        GPUX_CLUSTER_ID: clusterId,
        NATS_URL,
        ...cluster.agentEnv,
        GPUX_SSH_LISTEN: '127.0.0.1:0',
        GPUX_HEARTBEAT_SECONDS: '1',
        GPUX_STATE_DIR: stateDir,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    agent.stdout?.on('data', (b: Buffer) => (output += b.toString()));
    agent.stderr?.on('data', (b: Buffer) => (output += b.toString()));
    await until('a heartbeat', () => exchange.of('heartbeat', clusterId).length > 0);
    // Health and GPUs from Node status, not nvidia-smi.
    const beat = exchange.of('heartbeat', clusterId).at(-1) as {
      nodes: { hostname: string; healthy: boolean; gpus: { name: string }[] }[];
    };
    expect(beat.nodes).toHaveLength(1);
    expect(beat.nodes[0]).toMatchObject({ hostname: NODE, healthy: true });
    expect(beat.nodes[0]?.gpus.map((g) => g.name)).toEqual(Array(8).fill('NVIDIA-H100-80GB-HBM3'));

    const lease = exchange.addLease(clusterId, [NODE], [readFileSync(`${key}.pub`, 'utf8').trim()]);
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

    const m = /^([^@]+)@([^:]+):(\d+)$/.exec(report.sshEndpoints[0]?.endpoint ?? '');
    const [, user = '', host = '', portText = '0'] = m ?? [];
    const port = Number(portText);
    writeFileSync(knownHosts, `[${host}]:${port} ${report.sshHostKeys[0] ?? ''}\n`);
    const login = await run(ssh(`${user}@${host}`, port, 'echo in-the-workspace; exit 3'));
    expect(login, output).toMatchObject({ code: 3, out: 'in-the-workspace\n' });

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
    expect(canI.out.trim()).toBe('yes');
    expect((await kubectl(report.kubeconfig, 'get', 'pods', '-n', 'gpux-system')).code).not.toBe(0);
    expect((await kubectl(report.kubeconfig, 'get', 'nodes')).code).not.toBe(0);

    const session = ssh(`${user}@${host}`, port, 'echo started; sleep 60');
    const ended = run(session);
    let started = '';
    session.stdout?.on('data', (b: Buffer) => (started += b.toString()));
    await until('the session running', () => started.includes('started'));

    const t0 = performance.now();
    await exchange.publish(exchange.endLease(clusterId, lease.lease_id));
    const closed = await ended;
    const sessionClosedMs = performance.now() - t0;
    expect(closed.code).toBe(255);
    expect(closed.err).toContain(`gpux: lease ${lease.lease_id} terminated`);
    await until('ReportRevoked', () => exchange.of('reportRevoked', clusterId).length === 1);
    const revokedMs = performance.now() - t0;
    expect(k8s.get('v1', 'Namespace', '', lease.namespace)).toBeUndefined();
    const after = await kubectl(report.kubeconfig, 'get', 'pods', '-n', lease.namespace);
    expect(after.code).not.toBe(0);
    expect(after.out).toMatch(/Unauthorized|must be logged in/);
    console.log(
      `kubernetes revocation against the API double: session closed ${sessionClosedMs.toFixed(0)} ms, access gone and reported ${revokedMs.toFixed(0)} ms after the revoke event`,
    );

    agent.kill('SIGTERM');
    const [code] = (await once(agent, 'exit')) as [number | null];
    expect(code).toBe(0);
  });
});
