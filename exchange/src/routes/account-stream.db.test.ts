// GET /v1/account/stream over real HTTP (issue 22, docs/api/account-events.md):
// an account's fills, lease changes, cancellations and postings arrive in
// order, numbered 1, 2, 3… per account; Last-Event-ID resumes; another
// account sees none of them; and the events, written with the changes they
// report, are there after an exchange restart, where the numbers go on.

import { HOUR_MS } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { SseClient } from '../feed/testing/sse-client.js';
import type { SseEvent } from '../feed/testing/sse-client.js';
import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;
let url: string;

beforeAll(async () => {
  ex = await testExchange();
  url = await ex.listen();
});

afterAll(async () => {
  await ex.close();
});

function stream(base: string, who: Party, lastEventId?: number): Promise<SseClient> {
  return SseClient.open(`${base}/v1/account/stream`, {
    authorization: `Bearer ${who.token}`,
    ...(lastEventId === undefined ? {} : { 'last-event-id': String(lastEventId) }),
  });
}

/** The next `n` events of the account (heartbeats passed over), checked numbered in a row. */
async function take(client: SseClient, n: number): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  while (out.length < n) {
    const e = await client.next();
    if (e === undefined) throw new Error(`the stream ended after ${out.length} events`);
    if (e.event === 'heartbeat' || e.event === 'ready') continue;
    out.push(e);
  }
  for (const e of out) {
    expect(e.id).toBe(String(e.data['seq']));
    expect(e.data['type']).toBe(e.event);
    expect(String(e.data['id'])).toMatch(/^evt_/);
  }
  return out;
}

const seqs = (events: readonly SseEvent[]): number[] => events.map((e) => Number(e.id));
const kinds = (events: readonly SseEvent[]): string[] => events.map((e) => e.event);

describe('GET /v1/account/stream', () => {
  it('sends the account its fill, its lease’s changes and its postings, in order, and resumes by Last-Event-ID', async () => {
    const m = await ex.marketLease('stream');
    const buyer = await stream(url, m.buyer, 0);
    expect(buyer.status).toBe(200);
    expect(buyer.headers['content-type']).toMatch(/^text\/event-stream/);
    // Like every authenticated answer (docs/api/accounts.md): the query budget it took from.
    expect(Number(buyer.headers['x-ratelimit-limit'])).toBeGreaterThan(0);
    expect(buyer.headers['x-ratelimit-remaining']).toMatch(/^\d+$/);
    expect(buyer.headers['x-ratelimit-reset']).toMatch(/^\d+$/);
    const ready = await buyer.next();
    expect(ready).toMatchObject({ id: '0', event: 'ready', data: { seq: 0 } });
    const bought = await take(buyer, 3);
    expect(kinds(bought)).toEqual(['order.filled', 'lease.provisioning', 'transaction.posted']);
    expect(seqs(bought)).toEqual([1, 2, 3]);
    const [fill, provisioning, charge] = bought.map(
      (e) => e.data['data'] as Record<string, unknown>,
    );
    expect(fill).toMatchObject({ order_id: m.orderId, side: 'buy', gpu_count: 8, filled_gpus: 8 });
    expect(fill?.['fill']).toMatchObject({ gpus: 8, price: 2, hours: 4, lease_id: m.leaseId });
    expect(provisioning).toMatchObject({ lease_id: m.leaseId, status: 'provisioning' });
    // $2 × 8 GPUs × 4 h, and the buyer's fee on top (D2).
    expect(charge).toMatchObject({ kind: 'lease_charge', lease_id: m.leaseId });
    expect(Number(charge?.['amount'])).toBeLessThan(-64);

    // Live: the agent reports the lease provisioned, the buyer terminates it.
    await ex.leaseReady(m.leaseId, m.book);
    const [active] = await take(buyer, 1);
    expect(active).toMatchObject({ id: '4', event: 'lease.active' });
    expect((await ex.call('DELETE', `/v1/leases/${m.leaseId}`, m.buyer.token)).status).toBe(200);
    const ended = await take(buyer, 2);
    expect(kinds(ended).sort()).toEqual(['lease.terminated', 'transaction.posted']);
    expect(seqs(ended)).toEqual([5, 6]);
    buyer.close();

    // The provider: its sell's fill and its proceeds, numbered from 1 of its own.
    const provider = await stream(url, m.provider, 0);
    const sold = await take(provider, 2);
    expect(kinds(sold)).toEqual(['order.filled', 'transaction.posted']);
    expect(seqs(sold)).toEqual([1, 2]);
    expect(sold[0]?.data['data']).toMatchObject({ side: 'sell', fill: { lease_id: m.leaseId } });
    provider.close();

    // Resumed after 3: 4, 5, 6 again, nothing before.
    const resumed = await stream(url, m.buyer, 3);
    expect(await resumed.next()).toMatchObject({ id: '3', event: 'ready' });
    expect(seqs(await take(resumed, 3))).toEqual([4, 5, 6]);
    resumed.close();
  });

  it('sends a cancellation with its reason, and without Last-Event-ID starts after the last event', async () => {
    const book = ex.book();
    const buyer = await ex.party('canceller');
    const order = await ex.call('POST', '/v1/orders', buyer.token, {
      side: 'buy',
      ...book,
      gpu_count: 8,
      duration_hours: 2,
      limit_price: 1.5,
    });
    expect(order.status).toBe(200);
    const client = await stream(url, buyer);
    expect(await client.next()).toMatchObject({ id: '0', event: 'ready', data: { seq: 0 } });
    const id = String(order.json['order_id']);
    expect((await ex.call('DELETE', `/v1/orders/${id}`, buyer.token)).status).toBe(200);
    const [cancelled] = await take(client, 1);
    expect(cancelled).toMatchObject({ id: '1', event: 'order.cancelled' });
    expect(cancelled?.data['data']).toMatchObject({
      order_id: id,
      reason: 'user',
      cancelled_gpus: 8,
      filled_gpus: 0,
    });
    client.close();
  });

  it('never sends another account’s events: its first is its own', async () => {
    const other = await ex.party('bystander', { scopes: ['read'] });
    const client = await stream(url, other);
    expect(await client.next()).toMatchObject({ event: 'ready', data: { seq: 0 } });
    // Someone else trades meanwhile.
    await ex.marketLease('elsewhere');
    const credit = await ex.call(
      'POST',
      `/v1/admin/accounts/${other.accountId}/adjustments`,
      ADMIN_TOKEN,
      { amount: 5, reason: 'goodwill for the stream test' },
    );
    expect(credit.status).toBe(201);
    const [own] = await take(client, 1);
    expect(own).toMatchObject({ id: '1', event: 'transaction.posted' });
    expect(own?.data['data']).toMatchObject({ kind: 'adjustment', amount: 5 });
    client.close();
  });

  it('refuses a Last-Event-ID past the account’s last event, a malformed one, and no token', async () => {
    const who = await ex.party('early');
    const ahead = await stream(url, who, 7);
    expect(ahead.status).toBe(400);
    expect(JSON.parse(await ahead.text())).toMatchObject({ error: { code: 'invalid_request' } });
    const bad = await SseClient.open(`${url}/v1/account/stream`, {
      authorization: `Bearer ${who.token}`,
      'last-event-id': 'abc',
    });
    expect(bad.status).toBe(400);
    bad.close();
    const anonymous = await SseClient.open(`${url}/v1/account/stream`);
    expect(anonymous.status).toBe(401);
    anonymous.close();
  });

  it('keeps the events across an exchange restart, and numbers the next ones on', async () => {
    const m = await ex.marketLease('restart');
    await ex.leaseReady(m.leaseId, m.book);
    const before = await stream(url, m.buyer, 0);
    const first = await take(before, 4);
    before.close();
    await ex.stop();

    const again = await testExchange({ db: ex.db });
    try {
      const base = await again.listen();
      const after = await stream(base, m.buyer, 0);
      const replayed = await take(after, 4);
      expect(replayed.map((e) => e.data)).toEqual(first.map((e) => e.data));
      // The lease runs out on the new exchange: lease.expired is number 5.
      await again.tick(5 * HOUR_MS);
      const [expired] = await take(after, 1);
      expect(expired).toMatchObject({ id: '5', event: 'lease.expired' });
      expect(expired?.data['data']).toMatchObject({ lease_id: m.leaseId, status: 'expired' });
      after.close();
    } finally {
      await again.stop();
    }
  });
});
