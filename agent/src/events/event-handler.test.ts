import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';

import { ExchangeError } from '../exchange/exchange-client.js';
import type { LeaseWorker } from '../leases/lease-worker.js';
import { SILENT_LOGGER } from '../logger.js';
import { handleEvent, redeliveryDelayMs } from './event-handler.js';
import type { EventMessage } from './event-stream.js';

const CLUSTER = 'cls_1';
const LEASE = 'lse_01jdq3m5x0aaaaaaaaaaaaaaaa';

function message(data: unknown, deliveryCount = 1) {
  const seen: string[] = [];
  const m: EventMessage = {
    subject: 'gpux.cluster.cls_1.lease.revoke',
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

function worker(revokeImpl: () => Promise<void>): LeaseWorker<never> {
  return { revoke: revokeImpl } as unknown as LeaseWorker<never>;
}

const options = (w: LeaseWorker<never>) => ({
  clusterId: CLUSTER,
  worker: w,
  logger: SILENT_LOGGER,
  endOf: () => 99,
});

describe('lease event handling (D29: ack only after the work)', () => {
  it('acks once the work is done', async () => {
    const calls: unknown[] = [];
    const w = worker((...args: unknown[]) => {
      calls.push(args);
      return Promise.resolve();
    });
    const { m, seen } = message(revoke);
    await handleEvent(m, options(w));
    expect(seen).toEqual(['ack']);
    expect(calls).toEqual([[LEASE, { reason: 'terminated', atMs: 5, endMs: 99 }]]);
  });

  it('work that could not be done now is delivered again later, with a growing delay', async () => {
    const w = worker(() =>
      Promise.reject(new ExchangeError('ReportRevoked', status.UNAVAILABLE, 'down')),
    );
    const { m, seen } = message(revoke, 3);
    await handleEvent(m, options(w));
    expect(seen).toEqual(['nak 4000']);
    expect([1, 2, 3, 6, 50].map(redeliveryDelayMs)).toEqual([1_000, 2_000, 4_000, 30_000, 30_000]);
  });

  it('a payload that can never be handled, or of another cluster, is acked and not retried', async () => {
    const w = worker(() => Promise.reject(new Error('must not be called')));
    for (const data of ['{oops', { ...revoke, cluster_id: 'cls_other' }]) {
      const { m, seen } = message(data);
      await handleEvent(m, options(w));
      expect(seen).toEqual(['ack']);
    }
  });
});
