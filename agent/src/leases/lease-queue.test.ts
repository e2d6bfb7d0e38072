import { afterEach, describe, expect, it, vi } from 'vitest';

import { SILENT_LOGGER } from '../logger.js';
import type { LeaseSpec } from '../provisioner/lease-spec.js';
import { LeaseQueue, mergeLeaseWork } from './lease-queue.js';
import type { LeaseWork } from './lease-queue.js';
import type { LeaseWorker, Provisioned } from './lease-worker.js';

const LEASE = 'lse_01jdq3m5x0aaaaaaaaaaaaaaaa';
const lease: LeaseSpec = {
  leaseId: LEASE,
  namespace: 'gpux-lse-01jdq3m5x0aaaaaaaaaaaaaaaa',
  leaseUser: 'lse-01jdq3m5x0aaaaaaaaaaaaaaaa',
  nodes: [{ hostname: 'node-a', sshUser: 'lse-01jdq3m5x0aaaaaaaaaaaaaaaa-1' }],
  gpuCount: 8,
  startMs: 1,
  endMs: 10 * 3_600_000,
  sshPublicKeys: [],
  sourceLeaseId: null,
};

const provision = (force = false): LeaseWork => ({ kind: 'provision', lease, force });
const revoke = (reason: string, atMs: number, endMs?: number): LeaseWork => ({
  kind: 'revoke',
  why: { reason, atMs, endMs },
});

/** A worker that records its calls; `provision` answers as the test says. */
function fakeWorker(answer: () => Promise<Provisioned>) {
  const calls: string[] = [];
  const worker = {
    provision: (_l: LeaseSpec, o: { force?: boolean }) => {
      calls.push(`provision${o.force === true ? ' forced' : ''}`);
      return answer();
    },
    revoke: (id: string, why: { reason: string }) => {
      calls.push(`revoke ${why.reason}`);
      return Promise.resolve();
    },
    preempt: () => calls.push('preempt'),
    markReported: () => {
      calls.push('mark reported');
      return Promise.resolve();
    },
  } as unknown as LeaseWorker;
  return { worker, calls };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('work on one lease, merged (D30)', () => {
  it('a revocation wins over anything; two provisions are one, forced if either was', () => {
    expect(mergeLeaseWork(provision(), revoke('terminated', 5))).toEqual(revoke('terminated', 5));
    expect(mergeLeaseWork(revoke('terminated', 5), provision(true))).toEqual(
      revoke('terminated', 5),
    );
    expect(mergeLeaseWork(revoke('terminated', 7), revoke('expired', 5, 99))).toEqual(
      revoke('terminated', 5, 99),
    );
    expect(mergeLeaseWork(provision(), provision(true))).toEqual(provision(true));
    expect(mergeLeaseWork({ kind: 'mark-reported' }, provision())).toEqual(provision());
    expect(mergeLeaseWork(provision(), { kind: 'mark-reported' })).toEqual(provision());
  });
});

describe('the lease queue', () => {
  it('a revocation stops a provisioning under way at once, and runs right after it', async () => {
    let finish!: (p: Provisioned) => void;
    const { worker, calls } = fakeWorker(
      () => new Promise<Provisioned>((resolve) => (finish = resolve)),
    );
    const leases = new LeaseQueue({ worker, logger: SILENT_LOGGER });
    const provisioning = leases.provision(lease);
    await new Promise((r) => setTimeout(r, 0));
    const revoking = leases.revoke(LEASE, { reason: 'terminated', atMs: 5 });
    // Preempted before the queue gets to the revocation (one worker per lease).
    expect(calls).toEqual(['provision', 'preempt']);
    finish({ outcome: 'revoked' });
    expect(await provisioning).toBe('revoked');
    await revoking;
    expect(calls).toEqual(['provision', 'preempt', 'revoke terminated']);
  });

  it('D28: an access whose token ends before the lease is provisioned again when due; not after a revocation', async () => {
    vi.useFakeTimers({ now: 0 });
    let refreshAtMs: number | undefined = 60_000;
    const { worker, calls } = fakeWorker(() =>
      Promise.resolve({ outcome: 'provisioned', refreshAtMs }),
    );
    const leases = new LeaseQueue({ worker, logger: SILENT_LOGGER });
    await leases.provision(lease);
    expect(calls).toEqual(['provision']);
    refreshAtMs = 120_000;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls).toEqual(['provision', 'provision']);
    // The refreshed access is due again at its own time, unless the lease goes first.
    await leases.revoke(LEASE, { reason: 'terminated', atMs: 1 });
    await vi.advanceTimersByTimeAsync(120_000);
    expect(calls).toEqual(['provision', 'provision', 'preempt', 'revoke terminated']);
  });

  it('a report that fails is tried again by the queue, with its backoff', async () => {
    vi.useFakeTimers({ now: 0 });
    let tries = 0;
    const { worker } = fakeWorker(() =>
      ++tries === 1
        ? Promise.reject(new Error('exchange down'))
        : Promise.resolve({ outcome: 'reported' }),
    );
    const leases = new LeaseQueue({ worker, logger: SILENT_LOGGER });
    const reported = leases.provision(lease, true);
    await vi.advanceTimersByTimeAsync(999);
    expect(tries).toBe(1);
    expect(leases.size).toEqual({ queued: 0, running: 0, retrying: 1 });
    await vi.advanceTimersByTimeAsync(1);
    expect(await reported).toBe('reported');
    expect(tries).toBe(2);
  });
});
