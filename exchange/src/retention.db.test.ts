// What the exchange forgets (retention.ts, docs/operations.md "What is kept"):
// Idempotency-Keys after 24 h (D23), published outbox rows after
// GPUX_OUTBOX_RETENTION_HOURS, never an unpublished one; and the first round
// runs when the owner takes the market, not an hour later. Accounts' own
// events after GPUX_ACCOUNT_EVENT_RETENTION_HOURS (issue 22).

import { HOUR_MS } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { testExchange } from './market/testing/test-exchange.js';
import type { TestExchange } from './market/testing/test-exchange.js';
import { forgetExpired, startRetention } from './retention.js';
import { accountEvent, appendAccountEvents } from './account-events/events.js';
import { SILENT_LOGGER } from './logger.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange();
});

afterAll(async () => {
  await ex?.close();
});

const WEEK_MS = 7 * 24 * HOUR_MS;
const MONTH_MS = 30 * 24 * HOUR_MS;
const KEEP = { outboxRetentionMs: WEEK_MS, accountEventRetentionMs: MONTH_MS };

const order = (price: number): Record<string, unknown> => ({
  side: 'buy',
  gpu_type: 'h100',
  zone: 'us-west-1',
  gpu_count: 8,
  duration_hours: 10,
  limit_price: price,
});

/** Places an order under `key`, then moves the key's row `ageMs` into the past. */
async function keyAged(token: string, key: string, ageMs: number): Promise<void> {
  const r = await ex.call('POST', '/v1/orders', token, order(1.1), { 'idempotency-key': key });
  expect(r.status).toBe(200);
  await ex.db.query('UPDATE idempotency_keys SET created_ms = created_ms - $2 WHERE key = $1', [
    key,
    ageMs,
  ]);
}

async function keys(): Promise<string[]> {
  const rows = await ex.db.query<{ key: string }>('SELECT key FROM idempotency_keys ORDER BY key');
  return rows.map((r) => r.key);
}

/** An outbox row published `publishedAgoMs` ago (null: not published). */
async function outboxRow(id: string, publishedAgoMs: number | null): Promise<void> {
  const now = ex.clock.now();
  await ex.db.query(
    `INSERT INTO outbox (event_id, subject, payload, created_ms, published_ms)
     VALUES ($1, 'retention.test', '{}', $2, $3)`,
    [id, now - 30 * 24 * HOUR_MS, publishedAgoMs === null ? null : now - publishedAgoMs],
  );
}

async function outboxIds(): Promise<string[]> {
  const rows = await ex.db.query<{ event_id: string }>(
    "SELECT event_id FROM outbox WHERE subject = 'retention.test' ORDER BY event_id",
  );
  return rows.map((r) => r.event_id);
}

describe('retention', () => {
  it('D23: forgets Idempotency-Keys older than 24 h, keeps younger ones, which still replay', async () => {
    const buyer = await ex.party('buyer');
    await keyAged(buyer.token, 'r-48h', 48 * HOUR_MS);
    await keyAged(buyer.token, 'r-25h', 25 * HOUR_MS);
    await keyAged(buyer.token, 'r-23h', 23 * HOUR_MS);
    await keyAged(buyer.token, 'r-now', 0);

    const forgotten = await forgetExpired(ex.db, ex.clock.now(), KEEP);
    expect(forgotten.idempotencyKeys).toBe(2);
    expect(await keys()).toEqual(['r-23h', 'r-now']);
    const again = await ex.call('POST', '/v1/orders', buyer.token, order(1.1), {
      'idempotency-key': 'r-23h',
    });
    expect(again.headers['idempotent-replayed']).toBe('true');
  });

  it('forgets outbox rows published longer ago than the retention, never an unpublished one', async () => {
    await outboxRow('ev-old-published', 8 * 24 * HOUR_MS);
    await outboxRow('ev-old-unpublished', null);
    await outboxRow('ev-recent-published', HOUR_MS);
    const forgotten = await forgetExpired(ex.db, ex.clock.now(), KEEP);
    expect(forgotten.outboxRows).toBe(1);
    expect(await outboxIds()).toEqual(['ev-old-unpublished', 'ev-recent-published']);
    // A shorter retention takes the recent one too; the unpublished row stays.
    await forgetExpired(ex.db, ex.clock.now(), { ...KEEP, outboxRetentionMs: HOUR_MS / 2 });
    expect(await outboxIds()).toEqual(['ev-old-unpublished']);
    await ex.db.query("DELETE FROM outbox WHERE subject = 'retention.test'");
  });

  it('forgets accounts’ events older than their retention; the account’s numbers go on', async () => {
    const buyer = await ex.party('buyer');
    const now = ex.clock.now();
    await appendAccountEvents(ex.db, [
      accountEvent(buyer.accountId, 'transaction.posted', { n: 1 }, now - MONTH_MS - HOUR_MS),
      accountEvent(buyer.accountId, 'transaction.posted', { n: 2 }, now - HOUR_MS),
    ]);
    await ex.numberEvents();
    const forgotten = await forgetExpired(ex.db, now, KEEP);
    expect(forgotten.accountEvents).toBe(1);
    await appendAccountEvents(ex.db, [accountEvent(buyer.accountId, 'order.filled', {}, now)]);
    await ex.numberEvents();
    const rows = await ex.db.query<{ seq: number }>(
      'SELECT seq FROM account_events WHERE account_id = $1 ORDER BY seq',
      [buyer.accountId],
    );
    expect(rows.map((r) => r.seq)).toEqual([2, 3]);
  });

  it('the first round runs when it starts (a restart does not put the purge off)', async () => {
    const buyer = await ex.party('buyer');
    await keyAged(buyer.token, 'r-start-25h', 25 * HOUR_MS);
    const stop = startRetention(ex.db, SILENT_LOGGER, KEEP, 3_600_000, () => ex.clock.now());
    try {
      for (let i = 0; i < 100 && (await keys()).includes('r-start-25h'); i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(await keys()).not.toContain('r-start-25h');
    } finally {
      stop();
    }
  });
});
