import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';

import { ExchangeError } from '../exchange/exchange-client.js';
import { LeaseQueue } from '../leases/lease-queue.js';
import type { LeaseWorker, Provisioned } from '../leases/lease-worker.js';
import { SILENT_LOGGER } from '../logger.js';
import { handleEvent } from './event-handler.js';
import type { EventMessage } from './event-stream.js';

const CLUSTER = 'cls_1';
const LEASE = 'lse_01jdq3m5x0aaaaaaaaaaaaaaaa';

function message(data: unknown, deliveryCount = 1) {
  const seen: string[] = [];
  const m: EventMessage = {
    subject: 'gpux.cluster.cls_1.lease.x',
    data: typeof data === 'string' ? data : JSON.stringify(data),
    deliveryCount,
    ack: () => {
      seen.push('ack');
      return Promise.resolve();
    },
    nak: (delayMs) => seen.push(`nak ${delayMs}`),
    working: () => seen.push('working'),
  };
  return { m, seen };
}

const revoke = {
  kind: 'lease.revoke',
  event_id: 'evt_1',
  lease_id: LEASE,
  cluster_id: CLUSTER,
  namespace: 'ns',
  nodes: ['n1'],
  reason: 'terminated',
  at_ms: 5,
};

const provision = {
  kind: 'lease.provision',
  event_id: 'evt_2',
  lease_id: LEASE,
  cluster_id: CLUSTER,
  account_id: 'acc_1',
  namespace: 'ns',
  lease_user: 'lse-1',
  nodes: [{ hostname: 'n1', ssh_user: 'lse-1-1' }],
  gpu_count: 8,
  start_ms: 1,
  end_ms: 9_999_999_999_999,
  source_lease_id: null,
  ssh_public_keys: [],
};

/** A worker whose steps the test scripts; a queue that retries after 10 ms. */
function setUp(w: Partial<Record<'provision' | 'revoke', (...a: unknown[]) => Promise<unknown>>>) {
  const worker = {
    provision: w.provision ?? (() => Promise.resolve({ outcome: 'provisioned' })),
    revoke: w.revoke ?? (() => Promise.resolve()),
    preempt: () => undefined,
    markReported: () => Promise.resolve(),
  } as unknown as LeaseWorker;
  const leases = new LeaseQueue({
    worker,
    logger: SILENT_LOGGER,
    retry: { baseMs: 10, maxMs: 10, perSecond: 1_000, burst: 1_000 },
  });
  const options = { clusterId: CLUSTER, leases, logger: SILENT_LOGGER, endOf: () => 99 };
  return { leases, options };
}

describe('lease event handling (D29: ack only after the work)', () => {
  it('acks once the work is done', async () => {
    const calls: unknown[] = [];
    const { options } = setUp({
      revoke: (...args) => {
        calls.push(args);
        return Promise.resolve();
      },
    });
    const { m, seen } = message(revoke);
    await handleEvent(m, options);
    expect(seen).toEqual(['ack']);
    expect(calls).toEqual([[LEASE, { reason: 'terminated', atMs: 5, endMs: 99 }]]);
  });

  it('duplicates merge into the work queued for their lease and are acked only once it is done', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let runs = 0;
    const { options } = setUp({
      provision: async (): Promise<Provisioned> => {
        runs++;
        await gate;
        return { outcome: runs === 1 ? 'provisioned' : 'unchanged' };
      },
    });
    const first = message(provision);
    const again = [message(provision, 2), message(provision, 3)];
    const handled = [first, ...again].map(({ m }) => handleEvent(m, options));
    await new Promise((r) => setTimeout(r, 20));
    // Nothing is acked while its work is under way, duplicates included.
    expect([first, ...again].map((x) => x.seen)).toEqual([[], [], []]);
    release();
    await Promise.all(handled);
    expect([first, ...again].map((x) => x.seen)).toEqual([['ack'], ['ack'], ['ack']]);
    // One run for the first delivery, one more for the two that came during it.
    expect(runs).toBe(2);
  });

  it('work that fails is tried again by the queue while the event waits; no redelivery is asked for', async () => {
    let tries = 0;
    const { options } = setUp({
      revoke: () =>
        ++tries < 3
          ? Promise.reject(new ExchangeError('ReportRevoked', status.UNAVAILABLE, 'down'))
          : Promise.resolve(),
    });
    const { m, seen } = message(revoke);
    await handleEvent(m, options);
    expect(tries).toBe(3);
    expect(seen).toEqual(['ack']);
  });

  it('work the stop leaves unfinished is handed back at once, not acked', async () => {
    const { leases, options } = setUp({
      provision: (...args) =>
        new Promise((_resolve, reject) => {
          const signal = (args[1] as { signal: AbortSignal }).signal;
          signal.addEventListener('abort', () => reject(signal.reason as Error));
        }),
    });
    const { m, seen } = message(provision);
    const handled = handleEvent(m, options);
    await new Promise((r) => setTimeout(r, 10));
    expect(await leases.drain(20)).toEqual({ unfinished: 1 });
    await handled;
    expect(seen).toEqual(['nak 0']);
  });

  it('a payload that can never be handled, or of another cluster, is acked and not retried', async () => {
    const { options } = setUp({
      provision: () => Promise.reject(new Error('must not be called')),
      revoke: () => Promise.reject(new Error('must not be called')),
    });
    for (const data of ['{oops', { ...revoke, cluster_id: 'cls_other' }]) {
      const { m, seen } = message(data);
      await handleEvent(m, options);
      expect(seen).toEqual(['ack']);
    }
  });
});
