import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import yaml from 'js-yaml';
import { afterEach, describe, expect, it } from 'vitest';

import type { LogFn, Logger } from '../logger.js';
import { SILENT_LOGGER } from '../logger.js';
import type { LeaseSpec } from './lease-spec.js';
import { ProvisionError } from './provisioner.js';
import type { NodeAccess } from './provisioner.js';
import { PLACEHOLDER_SERVER, SimulatedProvisioner } from './simulated-provisioner.js';

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

/** The node's workspace directory and the sessions' environment. */
function target(n: NodeAccess | undefined): { dir: string; env: Readonly<Record<string, string>> } {
  if (n?.workspace.kind !== 'directory') throw new Error('not a workspace directory');
  return n.workspace;
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function make(delayMs = 0, logger: Logger = SILENT_LOGGER) {
  const stateDir = mkdtempSync(join(tmpdir(), 'gpux-sim-'));
  dirs.push(stateDir);
  const p = new SimulatedProvisioner({
    stateDir,
    clusterId: 'cls_1',
    provisionDelayMs: delayMs,
    logger,
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
  });
  p.setClusterNodes(['node-a', 'node-b', 'node-c']);
  return { p, stateDir };
}

describe('simulated provisioner', () => {
  it('makes one directory per leased node and a kubeconfig bound to the namespace', async () => {
    const { p, stateDir } = make();
    const { access, changed } = await p.provision(lease);
    expect(changed).toBe(true);
    const ws = join(stateDir, 'workspaces', LEASE);
    expect(access.nodes.map((n) => [n.hostname, n.sshUser, n.nodeIndex, target(n).dir])).toEqual([
      ['node-a', lease.nodes[0]?.sshUser, 1, join(ws, lease.nodes[0]?.sshUser ?? '')],
      ['node-b', lease.nodes[1]?.sshUser, 2, join(ws, lease.nodes[1]?.sshUser ?? '')],
    ]);
    for (const n of access.nodes) expect(existsSync(target(n).dir)).toBe(true);
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
      const env = target(access.nodes[0]).env;
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
    const fast = new SimulatedProvisioner({
      stateDir,
      clusterId: 'cls_1',
      inventory: () => Promise.resolve({ kind: 'absent' }),
      logger: SILENT_LOGGER,
    });
    expect((await fast.provision(lease)).changed).toBe(true);
    expect((await fast.list())[0]?.access).toBeDefined();
  });

  it('revoke removes the workspace; twice is fine', async () => {
    const { p, stateDir } = make();
    await p.provision(lease);
    await p.revoke(LEASE);
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

  it('an unreadable lease record lists the workspace as unfinished, lease unknown, and says so', async () => {
    const warned: string[] = [];
    const warn: LogFn = (_o: object | string, msg?: string) => void warned.push(msg ?? '');
    const { p, stateDir } = make(0, { ...SILENT_LOGGER, warn });
    await p.provision(lease);
    const record = join(stateDir, 'workspaces', LEASE, 'lease.json');
    for (const broken of ['{"state":', '{"state":"ready","token":"t","lease":{"leaseId":"x"}}']) {
      writeFileSync(record, broken);
      expect(await p.list()).toEqual([{ leaseId: LEASE, lease: undefined, access: undefined }]);
    }
    expect(warned).toEqual([
      'simulated workspace record unreadable; listed as unfinished',
      'simulated workspace record unreadable; listed as unfinished',
    ]);
    // Provisioning it again writes it whole.
    expect((await p.provision(lease)).changed).toBe(true);
    expect((await p.list())[0]?.access).toBeDefined();
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
    const broken = new SimulatedProvisioner({
      stateDir,
      clusterId: 'cls_1',
      inventory: () => Promise.resolve({ kind: 'failed', problem: 'nvidia-smi failed: driver' }),
      logger: SILENT_LOGGER,
    });
    broken.setClusterNodes(['node-a']);
    expect(await broken.health()).toEqual([
      { hostname: 'node-a', healthy: false, problem: 'nvidia-smi failed: driver', gpus: [] },
    ]);
  });
});
