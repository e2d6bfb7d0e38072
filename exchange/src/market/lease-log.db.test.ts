// An operator follows a lease's end in the log: a termination (D26) and a
// failed provisioning (D25) are each logged at info, after their commit,
// with the lease's, account's and cluster's ids, the reason and the refund.

import { Writable } from 'node:stream';

import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { testExchange } from './testing/test-exchange.js';
import type { Party, TestExchange } from './testing/test-exchange.js';

const lines: Record<string, unknown>[] = [];
let ex: TestExchange;
const TIMEOUT_MS = 60_000;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) {
        if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  ex = await testExchange({
    logger: pino({ level: 'info' }, sink),
    provisioningTimeoutMs: TIMEOUT_MS,
  });
});

afterAll(async () => {
  await ex?.close();
});

async function lease(): Promise<{ id: string; buyer: Party; clusterId: string }> {
  const l = await ex.marketLease('log');
  return { id: l.leaseId, buyer: l.buyer, clusterId: l.clusterId };
}

const ended = (leaseId: string): Record<string, unknown>[] =>
  lines.filter((l) => l['lease_id'] === leaseId && l['level'] === 30);

describe('lease ends in the log', () => {
  it('a termination: its ids, reason and refund', async () => {
    const l = await lease();
    expect(ended(l.id)).toEqual([]);
    const t = await ex.call('DELETE', `/v1/leases/${l.id}`, l.buyer.token);
    expect(t.status).toBe(200);
    expect(ended(l.id)).toEqual([
      expect.objectContaining({
        msg: 'lease terminated',
        account_id: l.buyer.accountId,
        cluster_id: l.clusterId,
        reason: 'terminated',
        refund_cents: Math.round((t.json['refund_amount'] as number) * 100),
      }),
    ]);
  });

  it('a provisioning that times out: failed, with the full refund', async () => {
    const l = await lease();
    await ex.tick(TIMEOUT_MS + 1_000);
    expect(ended(l.id)).toEqual([
      expect.objectContaining({ msg: 'lease failed', reason: 'failed', cluster_id: l.clusterId }),
    ]);
  });
});
