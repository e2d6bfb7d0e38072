import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { LeaseDirectory } from '../lease-directory.js';
import { SILENT_LOGGER } from '../logger.js';
import type { LeaseSpec } from '../provisioner/lease-spec.js';
import { SimulatedProvisioner } from '../provisioner/simulated-provisioner.js';
import { SessionBackends } from '../sessions.js';
import type { SshGatewayPort } from '../ssh-port.js';
import type { SessionBackend } from '../ssh/types.js';
import { ReportMarks } from '../state/report-marks.js';
import { Tombstones } from '../state/tombstones.js';
import { FakeExchange } from '../testing/fake-exchange.js';
import { LeaseQueue } from './lease-queue.js';
import { LeaseWorker } from './lease-worker.js';

const CLUSTER = 'cls_01jdq3m5x0aaaaaaaaaaaaaaaa';
const LEASE = 'lse_01jdq3m5x0aaaaaaaaaaaaaaaa';
const USER = 'lse-01jdq3m5x0aaaaaaaaaaaaaaaa';

const lease: LeaseSpec = {
  leaseId: LEASE,
  namespace: `gpux-${USER}`,
  leaseUser: USER,
  nodes: [
    { hostname: 'node-a', sshUser: `${USER}-1` },
    { hostname: 'node-b', sshUser: `${USER}-2` },
  ],
  gpuCount: 16,
  startMs: Date.now() - 1_000,
  endMs: Date.now() + 3_600_000,
  sshPublicKeys: ['ssh-ed25519 AAAA buyer'],
  sourceLeaseId: null,
};

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function setUp(
  stateDir = mkdtempSync(join(tmpdir(), 'gpux-worker-')),
  delayMs = 0,
  now: () => number = Date.now,
) {
  dirs.push(stateDir);
  const steps: string[] = [];
  const exchange = new FakeExchange(CLUSTER, ['node-a', 'node-b']);
  const provisioner = new SimulatedProvisioner({
    stateDir,
    clusterId: CLUSTER,
    provisionDelayMs: delayMs,
    inventory: () => Promise.resolve({ kind: 'absent' }),
    logger: SILENT_LOGGER,
  });
  provisioner.setClusterNodes(['node-a', 'node-b']);
  const revokeWorkspace = provisioner.revoke.bind(provisioner);
  provisioner.revoke = async (id) => {
    steps.push('provisioner.revoke');
    await revokeWorkspace(id);
  };
  const reportRevoked = exchange.reportRevoked.bind(exchange);
  exchange.reportRevoked = (c, id) => {
    steps.push('ReportRevoked');
    return reportRevoked(c, id);
  };
  const gateway: SshGatewayPort = {
    hostKey: { publicKey: 'ssh-ed25519 AAAAhostkey', fingerprint: 'SHA256:x' },
    address: () => ({ host: '127.0.0.1', port: 2222 }),
    revoke: (id) => {
      steps.push(`gateway.revoke ${id}`);
      return Promise.resolve(1);
    },
  };
  // Backends that record being ended, made for a node at its first session.
  const sessions = new SessionBackends(
    () =>
      ({
        terminate: () => {
          steps.push('sessions.terminate');
          return Promise.resolve();
        },
      }) as unknown as SessionBackend,
  );
  const tombstones = new Tombstones(stateDir, SILENT_LOGGER);
  const reports = new ReportMarks(stateDir, SILENT_LOGGER);
  await tombstones.load();
  await reports.load();
  const directory = new LeaseDirectory(sessions);
  const worker = new LeaseWorker({
    clusterId: CLUSTER,
    exchange,
    provisioner,
    gateway,
    sessions,
    directory,
    tombstones,
    reports,
    advertiseHost: 'gpu.example',
    logger: SILENT_LOGGER,
    now,
  });
  const workspace = join(stateDir, 'workspaces', LEASE);
  return { stateDir, steps, exchange, provisioner, worker, directory, tombstones, workspace };
}

/** What a provisioning came to. */
const outcome = async (p: Promise<{ outcome: string }>): Promise<string> => (await p).outcome;

describe('lease worker', () => {
  it('provisions, then reports the endpoints, host key and kubeconfig once', async () => {
    const { exchange, worker, workspace, directory } = await setUp();
    expect(await outcome(worker.provision(lease))).toBe('provisioned');
    expect(existsSync(join(workspace, `${USER}-1`))).toBe(true);
    const reports = exchange.of('reportProvisioned');
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({
      clusterId: CLUSTER,
      leaseId: LEASE,
      sshEndpoints: [
        { hostname: 'node-a', endpoint: `${USER}-1@gpu.example:2222` },
        { hostname: 'node-b', endpoint: `${USER}-2@gpu.example:2222` },
      ],
      sshHostKeys: ['ssh-ed25519 AAAAhostkey'],
    });
    expect((reports[0] as { kubeconfig: string }).kubeconfig).toContain('kind: Config');
    expect(directory.lookup(`${USER}-2`)).toMatchObject({
      leaseId: LEASE,
      nodeIndex: 2,
      state: 'ready',
      authorizedKeys: ['ssh-ed25519 AAAA buyer'],
    });

    // Delivered again (D30): nothing changes, nothing is reported again.
    expect(await outcome(worker.provision(lease))).toBe('unchanged');
    expect(exchange.of('reportProvisioned')).toHaveLength(1);
  });

  it('a revoke that overtakes its provision wins: the lease is never provisioned', async () => {
    const { exchange, worker, workspace, stateDir } = await setUp();
    await worker.revoke(LEASE, { reason: 'terminated', atMs: Date.now() });
    expect(await outcome(worker.provision(lease))).toBe('revoked');
    expect(existsSync(workspace)).toBe(false);
    expect(exchange.of('reportProvisioned')).toEqual([]);
    expect(exchange.of('reportRevoked')).toEqual([{ clusterId: CLUSTER, leaseId: LEASE }]);

    // Remembered across a restart, until the lease's end.
    const restarted = await setUp(stateDir);
    expect(restarted.tombstones.get(LEASE)?.untilMs).toBe(lease.endMs);
    expect(await outcome(restarted.worker.provision(lease))).toBe('revoked');
    expect(restarted.exchange.of('reportProvisioned')).toEqual([]);
  });

  it('a lease whose tombstone cannot be read counts as revoked: never provisioned (D30)', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'gpux-worker-'));
    mkdirSync(join(stateDir, 'revoked'));
    writeFileSync(join(stateDir, 'revoked', `${LEASE}.json`), '{"untilMs":');
    const { exchange, worker, workspace } = await setUp(stateDir);
    expect(await outcome(worker.provision(lease))).toBe('revoked');
    expect(existsSync(workspace)).toBe(false);
    expect(exchange.of('reportProvisioned')).toEqual([]);
    // Its end is known now: a whole tombstone until then takes the unreadable one's place.
    expect(readFileSync(join(stateDir, 'revoked', `${LEASE}.json`), 'utf8')).toContain(
      `"untilMs":${lease.endMs}`,
    );
  });

  it('revocation order: SSH sessions first, then what they left running, the workspace, then ReportRevoked', async () => {
    const { steps, worker, workspace, directory } = await setUp();
    await worker.provision(lease);
    // A login made the node's session backend.
    expect(directory.lookup(`${USER}-1`)?.state).toBe('ready');
    await worker.revoke(LEASE, { reason: 'terminated', atMs: Date.now(), endMs: lease.endMs });
    expect(steps).toEqual([
      `gateway.revoke ${LEASE}`,
      'sessions.terminate',
      'provisioner.revoke',
      'ReportRevoked',
    ]);
    expect(existsSync(workspace)).toBe(false);

    // Delivered again: the sessions are refused again, nothing else happens.
    await worker.revoke(LEASE, { reason: 'terminated', atMs: Date.now() });
    expect(steps.filter((s) => s === 'ReportRevoked')).toHaveLength(1);
  });

  it('a revoke during provisioning stops it; nothing of it stays and it is never reported', async () => {
    const { exchange, worker, workspace } = await setUp(undefined, 60_000);
    const leases = new LeaseQueue({ worker, logger: SILENT_LOGGER });
    const provisioning = leases.provision(lease);
    while (!existsSync(join(workspace, 'lease.json'))) await new Promise((r) => setTimeout(r, 5));
    await leases.revoke(LEASE, { reason: 'terminated', atMs: Date.now() });
    expect(await provisioning).toBe('revoked');
    expect(existsSync(workspace)).toBe(false);
    expect(exchange.of('reportProvisioned')).toEqual([]);
  });

  it('the exchange unreachable at the report: it throws, and the next try reports the same access', async () => {
    const { exchange, worker } = await setUp();
    exchange.down.add('reportProvisioned');
    await expect(worker.provision(lease)).rejects.toThrow(/UNAVAILABLE/);
    exchange.down.delete('reportProvisioned');
    expect(await outcome(worker.provision(lease))).toBe('reported');
    const [failed, sent] = exchange.of('reportProvisioned') as { kubeconfig: string }[];
    expect(sent?.kubeconfig).toBe(failed?.kubeconfig);
    expect(await outcome(worker.provision(lease))).toBe('unchanged');
  });

  it('an access that changed on its own after its report (a refreshed token, D28) is reported; not again once answered', async () => {
    let clock = Date.now();
    const { exchange, provisioner, worker } = await setUp(undefined, 0, () => clock);
    expect(await outcome(worker.provision(lease))).toBe('provisioned');
    // The provisioner finds everything there (changed: false) but its access
    // is newer than the report the exchange answered: a restart cut that report off.
    const provision = provisioner.provision.bind(provisioner);
    let madeMs = clock + 60_000;
    provisioner.provision = async (l, signal) => {
      const r = await provision(l, signal);
      return { ...r, access: { ...r.access, madeMs } };
    };
    clock += 120_000;
    expect(await outcome(worker.provision(lease))).toBe('reported');
    expect(exchange.of('reportProvisioned')).toHaveLength(2);
    expect(await outcome(worker.provision(lease))).toBe('unchanged');
    madeMs = clock - 1; // made before the last answered report: it was answered for
    expect(await outcome(worker.provision(lease))).toBe('unchanged');
    expect(exchange.of('reportProvisioned')).toHaveLength(2);
  });

  it('D25: a lease that cannot be provisioned here is reported failed and left revoked', async () => {
    const { exchange, worker, workspace } = await setUp();
    const elsewhere = { ...lease, nodes: [{ hostname: 'not-ours', sshUser: `${USER}-1` }] };
    expect(await outcome(worker.provision(elsewhere))).toBe('failed');
    expect(exchange.of('reportFailed')).toEqual([
      { clusterId: CLUSTER, leaseId: LEASE, reason: 'node not-ours is not a node of this cluster' },
    ]);
    expect(existsSync(workspace)).toBe(false);
    expect(await outcome(worker.provision(lease))).toBe('revoked');
  });

  it('a lease past its end is not provisioned', async () => {
    const { exchange, worker } = await setUp();
    expect(await outcome(worker.provision({ ...lease, endMs: Date.now() - 1 }))).toBe('ended');
    expect(exchange.calls).toEqual([]);
  });
});
