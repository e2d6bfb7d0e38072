// GET /metrics of the exchange (issue 23, docs/metrics.md): scraped from a
// test exchange after real orders, fills, a halt and a lease's life; only
// the metrics token or an operator's token may read it.

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { LOCK_KEY } from '../account-events/numberer.js';
import { SseClient } from '../feed/testing/sse-client.js';
import { ADMIN_TOKEN, METRICS_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { MarketLease, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;
let lease: MarketLease;

beforeAll(async () => {
  ex = await testExchange({ provisioningTimeoutMs: 300_000 });
  lease = await ex.marketLease('metrics');
});

afterAll(async () => {
  await ex?.close();
});

async function scrape(token = METRICS_TOKEN): Promise<string> {
  const r = await ex.call('GET', '/metrics', token);
  expect(r.status, r.body).toBe(200);
  expect(String(r.headers['content-type'])).toMatch(/^text\/plain; version=0\.0\.4/);
  return r.body;
}

/** The value of one series, by its exact name and labels as printed. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const bookLabels = (l: MarketLease): string =>
  `gpu_type="${l.book.gpu_type}",zone="${l.book.zone}"`;

describe('GET /metrics', () => {
  it('is 401 without a token and 403 with a customer token', async () => {
    expect((await ex.call('GET', '/metrics', 'not-a-token')).status).toBe(401);
    expect((await ex.call('GET', '/metrics', lease.buyer.token)).status).toBe(403);
  });

  it('is read with the admin token as with the metrics token', async () => {
    expect(value(await scrape(ADMIN_TOKEN), 'gpux_market_owner')).toBe(1);
  });

  it("counts the book's orders and fills, with its labels, and its depth and spread", async () => {
    const b = bookLabels(lease);
    const text = await scrape();
    expect(value(text, `gpux_orders_total{${b}}`)).toBe(2);
    expect(value(text, `gpux_fills_total{${b}}`)).toBe(1);
    expect(value(text, `gpux_cancels_total{${b}}`)).toBe(0);
    expect(value(text, `gpux_book_halted{${b}}`)).toBe(0);

    // A resting bid of 8 GPUs; the provider's one node is leased, so no ask
    // rests and there is no spread.
    const bid = await ex.call('POST', '/v1/orders', lease.buyer.token, {
      side: 'buy',
      ...lease.book,
      gpu_count: 8,
      duration_hours: 2,
      order_type: 'limit',
      limit_price: 1,
    });
    expect(bid.status, bid.body).toBe(200);
    const resting = await scrape();
    expect(value(resting, `gpux_book_depth_gpus{${b},side="bid"}`)).toBe(8);
    expect(value(resting, `gpux_book_depth_gpus{${b},side="ask"}`)).toBe(0);
    expect(value(resting, `gpux_book_spread_cents{${b}}`)).toBeUndefined();
    const cancel = await ex.call(
      'DELETE',
      `/v1/orders/${bid.json['order_id'] as string}`,
      lease.buyer.token,
    );
    expect(cancel.status, cancel.body).toBe(200);
    const after = await scrape();
    expect(value(after, `gpux_orders_total{${b}}`)).toBe(3);
    expect(value(after, `gpux_cancels_total{${b}}`)).toBe(1);
    expect(value(after, `gpux_book_depth_gpus{${b},side="bid"}`)).toBe(0);
  });

  it('times requests by route pattern and status, never by raw URL', async () => {
    await ex.call('GET', `/v1/leases/${lease.leaseId}`, lease.buyer.token);
    const text = await scrape();
    expect(text).toMatch(
      /gpux_http_request_duration_seconds_count\{method="GET",route="\/v1\/leases\/:id",status="200"\} [1-9]/,
    );
    expect(text).toMatch(/route="\/v1\/orders",status="200"/);
    expect(text).not.toContain(lease.leaseId);
    expect(text).not.toContain(lease.orderId);
    expect(text).not.toContain(lease.buyer.accountId);
  });

  it('shows a halted book', async () => {
    const b = lease.book;
    const r = await ex.call('POST', `/v1/admin/books/${b.gpu_type}/${b.zone}/halt`, ADMIN_TOKEN, {
      reason: 'metrics test',
    });
    expect(r.status, r.body).toBe(200);
    expect(value(await scrape(), `gpux_book_halted{${bookLabels(lease)}}`)).toBe(1);
    await ex.call('POST', `/v1/admin/books/${b.gpu_type}/${b.zone}/resume`, ADMIN_TOKEN, {
      reason: 'metrics test over',
    });
  });

  it('measures the commit groups', async () => {
    const text = await scrape();
    expect(value(text, 'gpux_commit_duration_seconds_count')).toBeGreaterThan(0);
    expect(value(text, 'gpux_commit_commands_count')).toBeGreaterThan(0);
    expect(value(text, 'gpux_errors_total{kind="commit_failed"}')).toBe(0);
  });

  it('counts the changes whose account events wait to be numbered, and how old the oldest is', async () => {
    const queued = async (): Promise<number | undefined> =>
      value(await scrape(), 'gpux_account_event_queue');
    // What earlier tests queued is numbered within moments.
    await vi.waitFor(async () => expect(await queued()).toBe(0), { timeout: 10_000 });
    await ex.db.transaction(async (tx) => {
      // While this holds the numberer's lock, it numbers nothing (D35).
      await tx.query(`SELECT pg_advisory_xact_lock(${LOCK_KEY})`);
      const event = {
        account_id: lease.buyer.accountId,
        event_id: 'evt_metrics_queue_test',
        kind: 'transaction.posted',
        payload: {},
        created_ms: ex.clock.now() - 30_000,
      };
      await ex.db.query('INSERT INTO account_event_batches (events) VALUES ($1)', [
        JSON.stringify([event]),
      ]);
      const text = await scrape();
      expect(value(text, 'gpux_account_event_queue')).toBe(1);
      expect(value(text, 'gpux_account_event_queue_age_seconds')).toBe(30);
    });
    // The lock let go, the numberer takes it (it polls besides being woken).
    await vi.waitFor(async () => expect(await queued()).toBe(0), { timeout: 10_000 });
    expect(value(await scrape(), 'gpux_account_event_queue_age_seconds')).toBe(0);
  });

  it('counts the live feed streams open, by what writes them', async () => {
    const streams = async (): Promise<[number | undefined, number | undefined]> => {
      const text = await scrape();
      return [
        value(text, 'gpux_feed_streams{written_by="writer"}'),
        value(text, 'gpux_feed_streams{written_by="exchange"}'),
      ];
    };
    expect(await streams()).toEqual([0, 0]);
    const url = await ex.listen();
    const client = await SseClient.open(`${url}/v1/stream?gpu_type=h100&zone=us-west-1`);
    try {
      await vi.waitFor(async () => expect(await streams()).toEqual([1, 0]), { timeout: 10_000 });
    } finally {
      client.close();
    }
    await vi.waitFor(async () => expect(await streams()).toEqual([0, 0]), { timeout: 10_000 });
  });

  it('tells how far the oldest provisioning lease is into its timeout', async () => {
    expect(value(await scrape(), 'gpux_leases{state="provisioning"}')).toBe(1);
    ex.clock.advance(250_000);
    const text = await scrape();
    expect(value(text, 'gpux_leases_provisioning_oldest_seconds')).toBeGreaterThanOrEqual(250);
    expect(value(text, 'gpux_leases_provisioning_oldest_ratio')).toBeGreaterThanOrEqual(250 / 300);
  });

  it('ages an ended lease whose access the agent has not confirmed removed', async () => {
    await ex.leaseReady(lease.leaseId, lease.book);
    // What the agent's ReportProvisioned writes (providers/provider-leases.ts).
    await ex.db.query(
      `INSERT INTO lease_access (lease_id, ssh_endpoints, ssh_host_keys, reported_ms)
       VALUES ($1, '[]', '[]', $2)`,
      [lease.leaseId, ex.clock.now()],
    );
    expect(value(await scrape(), 'gpux_leases{state="active"}')).toBe(1);
    const end = await ex.call('DELETE', `/v1/leases/${lease.leaseId}`, lease.buyer.token);
    expect(end.status, end.body).toBe(200);
    ex.clock.advance(90_000);
    let text = await scrape();
    expect(value(text, 'gpux_unconfirmed_revocations')).toBe(1);
    expect(value(text, 'gpux_oldest_unconfirmed_revocation_seconds')).toBe(90);
    expect(value(text, 'gpux_leases_ended_total{reason="terminated"}')).toBe(1);
    await ex.db.query('UPDATE lease_access SET revoked_ms = $2 WHERE lease_id = $1', [
      lease.leaseId,
      ex.clock.now(),
    ]);
    text = await scrape();
    expect(value(text, 'gpux_unconfirmed_revocations')).toBe(0);
    expect(value(text, 'gpux_oldest_unconfirmed_revocation_seconds')).toBe(0);
  });
});
