import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import yaml from 'js-yaml';
import { afterEach, describe, expect, it } from 'vitest';

import type { LeaseSpec } from './lease-spec.js';
import { ProvisionError } from './provisioner.js';
import { PLACEHOLDER_SERVER, SimulatedProvisioner } from './simulated-provisioner.js';
import type { TerminableBackend } from './simulated-provisioner.js';

const LEASE = 'lse_01jdq3m5x0aaaaaaaaaaaaaaaa';

const lease: LeaseSpec = {
  leaseId: LEASE,
  namespace: 'gpux-lse-01jdq3m5x0aaaaaaaaaaaaaaaa',
  leaseUser: 'lse-01jdq3m5x0aaaaaaaaaaaaaaaa',
  nodes: [
    { hostname: 'node-a', sshUser: 'lse-01jdq3m5x0aaaaaaaaaaaaaaaa-1' },
    { hostname: 'node-b', sshUser: 'lse-01jdq3m5x0aaaaaaaaaaaaaaaa-2' },
  ],
  gpuCount: 16,
  startMs: 1,
  endMs: Date.now() + 3_600_000,
  sshPublicKeys: ['ssh-ed25519 AAAA buyer'],
  sourceLeaseId: null,
};

interface DirBackend extends TerminableBackend {
  readonly dir: string;
}

interface Backend {
  dir: string;
  env: Readonly<Record<string, string>>;
  terminated: number;
  terminate(): Promise<void>;
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function make(delayMs = 0) {
  const stateDir = mkdtempSync(join(tmpdir(), 'gpux-sim-'));
  dirs.push(stateDir);
  const backends: Backend[] = [];
  const p = new SimulatedProvisioner<Backend>({
    stateDir,
    clusterId: 'cls_1',
    provisionDelayMs: delayMs,
    inventory: () =>
      Promise.resolve({
        kind: 'ok',
        gpus: [
          {
            index: 0,
            name: 'H100',
            uuid: 'GPU-1',
            memoryTotalMib: 1,
            utilizationPercent: 0,
            temperatureC: 30,
          },
        ],
      }),
    backendFactory: (dir, env) => {
      const b: Backend = {
        dir,
        env,
        terminated: 0,
        terminate: () => {
          b.terminated++;
          return Promise.resolve();
        },
      };
      backends.push(b);
      return b;
    },
  });
  p.setClusterNodes(['node-a', 'node-b', 'node-c']);
  return { p, stateDir, backends };
}

describe('simulated provisioner', () => {
  it('makes one directory per leased node and a kubeconfig bound to the namespace', async () => {
    const { p, stateDir } = make();
    const { access, changed } = await p.provision(lease);
    expect(changed).toBe(true);
    const ws = join(stateDir, 'workspaces', LEASE);
    expect(access.nodes.map((n) => [n.hostname, n.sshUser, n.nodeIndex, n.backend.dir])).toEqual([
      ['node-a', lease.nodes[0]?.sshUser, 1, join(ws, lease.nodes[0]?.sshUser ?? '')],
      ['node-b', lease.nodes[1]?.sshUser, 2, join(ws, lease.nodes[1]?.sshUser ?? '')],
    ]);
    for (const n of access.nodes) expect(existsSync(n.backend.dir)).toBe(true);
    const kc = yaml.load(access.kubeconfig) as {
      clusters: { cluster: { server: string } }[];
      contexts: { context: { namespace: string } }[];
    };
    expect(kc.clusters[0]?.cluster.server).toBe(PLACEHOLDER_SERVER);
    expect(kc.contexts[0]?.context.namespace).toBe(lease.namespace);
    expect(access.kubeconfig).toMatch(/^# .*\n# .*placeholders until the/);
    expect(readFileSync(join(ws, 'kubeconfig.yaml'), 'utf8')).toBe(access.kubeconfig);
  });

  it("the sessions' environment is not the agent's (it holds the token)", async () => {
    process.env['GPUX_TOKEN'] = 'secret-of-the-agent';
    try {
      const { p } = make();
      const { access } = await p.provision(lease);
      const env = access.nodes[0]?.backend.env ?? {};
      expect(Object.values(env)).not.toContain('secret-of-the-agent');
      expect(env).toMatchObject({ GPUX_LEASE_ID: LEASE, GPUX_NODE: 'node-a' });
    } finally {
      delete process.env['GPUX_TOKEN'];
    }
  });

  it('D30: provisioning again returns the same access and changes nothing', async () => {
    const { p } = make();
    const first = await p.provision(lease);
    const again = await p.provision(lease);
    expect(again.changed).toBe(false);
    expect(again.access.kubeconfig).toBe(first.access.kubeconfig);
  });

  it('a workspace left half-made (a crash) is listed unfinished and finished by provisioning again', async () => {
    const { p, stateDir } = make(60_000);
    const abort = new AbortController();
    const pending = p.provision(lease, abort.signal);
    // Interrupted once its record is written, inside the provisioning delay.
    while ((await p.list())[0]?.lease === undefined) await new Promise((r) => setTimeout(r, 5));
    abort.abort();
    await expect(pending).rejects.toThrow();
    const listed = await p.list();
    expect(listed.map((w) => [w.leaseId, w.access === undefined, w.lease?.endMs])).toEqual([
      [LEASE, true, lease.endMs],
    ]);
    const fast = new SimulatedProvisioner<DirBackend>({
      stateDir,
      clusterId: 'cls_1',
      inventory: () => Promise.resolve({ kind: 'absent' }),
      backendFactory: (dir) => ({ dir }),
    });
    expect((await fast.provision(lease)).changed).toBe(true);
    expect((await fast.list())[0]?.access).toBeDefined();
  });

  it("revoke ends the sessions' processes, then removes the workspace; twice is fine", async () => {
    const { p, stateDir, backends } = make();
    await p.provision(lease);
    await p.revoke(LEASE);
    expect(backends.map((b) => b.terminated)).toEqual([1, 1]);
    expect(existsSync(join(stateDir, 'workspaces', LEASE))).toBe(false);
    expect(await p.list()).toEqual([]);
    await p.revoke(LEASE);
    await p.revoke('lse_01jdq3m5x0bbbbbbbbbbbbbbbb');
  });

  it('a lease on a node the cluster does not have cannot be provisioned (permanent)', async () => {
    const { p } = make();
    const bad = { ...lease, nodes: [{ hostname: 'elsewhere', sshUser: 'lse-x-1' }] };
    await expect(p.provision(bad)).rejects.toThrow(ProvisionError);
    await expect(p.provision(bad)).rejects.toMatchObject({ permanent: true });
    await expect(p.provision({ ...lease, leaseId: '../../etc' })).rejects.toMatchObject({
      permanent: true,
    });
  });

  it('an unreadable lease record lists the workspace as unfinished, lease unknown', async () => {
    const { p, stateDir } = make();
    await p.provision(lease);
    writeFileSync(join(stateDir, 'workspaces', LEASE, 'lease.json'), '{"state":');
    expect(await p.list()).toEqual([{ leaseId: LEASE, lease: undefined, access: undefined }]);
  });

  it("every cluster node reports the host's GPUs; a failing nvidia-smi makes them unhealthy", async () => {
    const { p } = make();
    const health = await p.health();
    expect(health.map((h) => [h.hostname, h.healthy, h.gpus.length])).toEqual([
      ['node-a', true, 1],
      ['node-b', true, 1],
      ['node-c', true, 1],
    ]);
    const stateDir = mkdtempSync(join(tmpdir(), 'gpux-sim-'));
    dirs.push(stateDir);
    const broken = new SimulatedProvisioner<DirBackend>({
      stateDir,
      clusterId: 'cls_1',
      inventory: () => Promise.resolve({ kind: 'failed', problem: 'nvidia-smi failed: driver' }),
      backendFactory: (dir) => ({ dir }),
    });
    broken.setClusterNodes(['node-a']);
    expect(await broken.health()).toEqual([
      { hostname: 'node-a', healthy: false, problem: 'nvidia-smi failed: driver', gpus: [] },
    ]);
  });
});
