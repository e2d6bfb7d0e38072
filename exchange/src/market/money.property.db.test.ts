// D3's invariant over the whole exchange, not one function: random sequences
// of orders, fills, cancellations, terminations, resales, expiries and
// provisioning failures, driven through the HTTP API on PostgreSQL. After
// every step the ledger sums to zero; at the end each account's balance is
// re-derived from the leases table (what was charged and refunded), the fills
// agree with the orders, and no node is in two live leases (D31).
//
// GPUX_PROP_SEED / GPUX_PROP_RUNS change the seed and the number of sequences.

import { GPUS_PER_NODE, HOUR_MS, splitFee } from '@gpux/shared';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PLATFORM_ACCOUNT_ID, ledgerTotal } from '../ledger/ledger.js';
import { danglingReferences } from './integrity.js';
import type { LeaseRow } from './rows.js';
import { testExchange } from './testing/test-exchange.js';
import type { Party, TestExchange } from './testing/test-exchange.js';

const SEED = Number(process.env['GPUX_PROP_SEED'] ?? 20261122);
const RUNS = Number(process.env['GPUX_PROP_RUNS'] ?? 12);
const RESELL_WEIGHT = Number(process.env['GPUX_RESELL_WEIGHT'] ?? 2);

let ex: TestExchange;
let providers: Party[];
let buyers: Party[];

beforeAll(async () => {
  ex = await testExchange({ provisioningTimeoutMs: 10 * 60_000 });
  providers = [await ex.account('prov-a'), await ex.account('prov-b')];
  // A buyer may also be a reseller; buyer-c shares prov-a's organization (D17).
  buyers = [
    await ex.account('buyer-a'),
    await ex.account('buyer-b'),
    await ex.account('buyer-c', { organization: 'prov-a' }),
  ];
  for (const p of providers) await ex.cluster(p, 6);
}, 60_000);

afterAll(async () => {
  await ex?.close();
});

type Cmd =
  | { k: 'sell'; who: number; nodes: number; cents: number; hours: number }
  | { k: 'buy'; who: number; nodes: number; hours: number; cents: number | null; partial: boolean }
  | { k: 'cancel'; pick: number }
  | { k: 'ready'; pick: number }
  | { k: 'terminate'; pick: number }
  | { k: 'resell'; pick: number; cents: number; fromMin: number; immediately: boolean }
  | { k: 'wait'; ms: number };

const price = fc.integer({ min: 150, max: 260 });
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      k: fc.constant('sell' as const),
      who: fc.nat(1),
      nodes: fc.integer({ min: 1, max: 3 }),
      cents: price,
      hours: fc.integer({ min: 2, max: 48 }),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      k: fc.constant('buy' as const),
      who: fc.nat(2),
      nodes: fc.integer({ min: 1, max: 3 }),
      hours: fc.integer({ min: 1, max: 12 }),
      cents: fc.option(price, { nil: null }),
      partial: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('cancel' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('ready' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('terminate' as const), pick: fc.nat() }) },
  {
    weight: RESELL_WEIGHT,
    arbitrary: fc.record({
      k: fc.constant('resell' as const),
      pick: fc.nat(),
      cents: price,
      // D27: offered now, or from later (a buy may then match before the
      // transfer, which the book's timer fires), transferring at once or not.
      fromMin: fc.oneof(fc.constant(0), fc.integer({ min: 5, max: 120 })),
      immediately: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('wait' as const),
      ms: fc.oneof(
        fc.integer({ min: 1, max: 9 * 60_000 }),
        fc.integer({ min: HOUR_MS, max: 6 * HOUR_MS }),
      ),
    }),
  },
);

const ACCEPTED = new Set([200, 409, 400]);

async function liveLeases(): Promise<LeaseRow[]> {
  return ex.db.query<LeaseRow>(
    "SELECT * FROM leases WHERE status IN ('provisioning', 'active') ORDER BY id",
  );
}

async function run(c: Cmd): Promise<void> {
  const book = { gpu_type: 'h100', zone: 'us-west-1' };
  switch (c.k) {
    case 'sell': {
      const r = await ex.call('POST', '/v1/orders', providers[c.who]!.token, {
        ...book,
        side: 'sell',
        gpu_count: c.nodes * GPUS_PER_NODE,
        duration_hours: c.hours,
        limit_price: c.cents / 100,
      });
      expect(ACCEPTED.has(r.status), r.body).toBe(true);
      return;
    }
    case 'buy': {
      const r = await ex.call('POST', '/v1/orders', buyers[c.who]!.token, {
        ...book,
        side: 'buy',
        gpu_count: c.nodes * GPUS_PER_NODE,
        duration_hours: c.hours,
        ...(c.cents === null ? {} : { limit_price: c.cents / 100, allow_partial: c.partial }),
      });
      expect(ACCEPTED.has(r.status), r.body).toBe(true);
      return;
    }
    case 'cancel': {
      const open = await ex.db.query<{ id: string; account_id: string }>(
        'SELECT id, account_id FROM orders WHERE book_state IS NOT NULL ORDER BY id',
      );
      const o = open[c.pick % Math.max(1, open.length)];
      if (o === undefined) return;
      const who = [...providers, ...buyers].find((p) => p.accountId === o.account_id)!;
      const r = await ex.call('DELETE', `/v1/orders/${o.id}`, who.token);
      expect(r.status, r.body).toBe(200);
      return;
    }
    case 'ready':
    case 'terminate':
    case 'resell': {
      const live = await liveLeases();
      const l = live[c.pick % Math.max(1, live.length)];
      if (l === undefined) return;
      if (c.k === 'ready') {
        await ex.market
          .writer(l.gpu_type, l.zone)
          .submit((s, ch) => s.leaseReady(l.id, ex.clock.now(), ch));
        return;
      }
      const who = buyers.find((p) => p.accountId === l.account_id)!;
      const r =
        c.k === 'terminate'
          ? await ex.call('DELETE', `/v1/leases/${l.id}`, who.token)
          : await ex.call('POST', `/v1/leases/${l.id}/resell`, who.token, {
              limit_price: c.cents / 100,
              ...(c.fromMin === 0
                ? {}
                : { available_from: new Date(ex.clock.now() + c.fromMin * 60_000).toISOString() }),
              transfer_immediately: c.immediately,
            });
      expect(ACCEPTED.has(r.status), r.body).toBe(true);
      return;
    }
    case 'wait':
      await ex.tick(c.ms);
  }
}

/** Each account's balance re-derived from the leases it bought and sold (D2, D25-D27). */
async function expectedBalances(): Promise<Map<string, number>> {
  const leases = await ex.db.query<LeaseRow>('SELECT * FROM leases');
  const out = new Map<string, number>();
  const add = (acc: string, c: number): void => void out.set(acc, (out.get(acc) ?? 0) + c);
  for (const l of leases) {
    add(l.account_id, -(l.compute_cents + l.fee_cents));
    add(l.seller_account_id, l.compute_cents - l.fee_cents);
    add(PLATFORM_ACCOUNT_ID, 2 * l.fee_cents);
    const refund = l.refund_cents ?? 0;
    if (l.status === 'failed') {
      add(l.account_id, l.compute_cents + l.fee_cents);
      add(l.seller_account_id, -(l.compute_cents - l.fee_cents));
      add(PLATFORM_ACCOUNT_ID, -2 * l.fee_cents);
    } else if (refund > 0) {
      const { fee, payout } = splitFee(refund);
      add(l.account_id, refund);
      add(l.seller_account_id, -payout);
      add(PLATFORM_ACCOUNT_ID, -fee);
    }
  }
  return out;
}

async function checkInvariants(): Promise<void> {
  expect(await ledgerTotal(ex.db)).toBe(0);
  const balances = await ex.db.query<{ account_id: string; cents: number }>(
    'SELECT account_id, SUM(amount_cents)::bigint AS cents FROM ledger_entries GROUP BY account_id',
  );
  const expected = await expectedBalances();
  for (const b of balances) expect(b.cents, b.account_id).toBe(expected.get(b.account_id) ?? 0);
  for (const [acc, c] of expected) {
    if (c !== 0) expect(balances.find((b) => b.account_id === acc)?.cents, acc).toBe(c);
  }
  // Orders agree with their fills.
  const bad = await ex.db.query(
    `SELECT o.id FROM orders o LEFT JOIN (
        SELECT order_id, SUM(gpus) AS gpus FROM (
          SELECT buy_order_id AS order_id, gpus FROM fills UNION ALL SELECT sell_order_id, gpus FROM fills
        ) f GROUP BY order_id) f ON f.order_id = o.id
      WHERE o.filled_gpus <> COALESCE(f.gpus, 0) OR o.filled_gpus + o.cancelled_gpus > o.gpu_count
         OR (o.book_state IS NULL AND o.filled_gpus + o.cancelled_gpus <> o.gpu_count)`,
  );
  expect(bad).toEqual([]);
  // D31: no node in two live leases that have started (a lease bought ahead
  // of its transfer shares its nodes with the lease sold until then, D27);
  // live leases and open sells fit the cluster.
  const doubled = await ex.db.query(
    `SELECT n.node_id FROM lease_nodes n JOIN leases l ON l.id = n.lease_id
      WHERE l.status IN ('provisioning', 'active') AND l.opened_ms IS NOT NULL
      GROUP BY n.node_id HAVING COUNT(*) > 1`,
  );
  expect(doubled).toEqual([]);
  const over = await ex.db.query(
    `SELECT c.id FROM clusters c
      WHERE (SELECT COUNT(DISTINCT n.node_id) FROM lease_nodes n JOIN leases l ON l.id = n.lease_id
              WHERE l.cluster_id = c.id AND l.status IN ('provisioning', 'active'))
          + (SELECT COALESCE(SUM(remaining_nodes), 0) FROM orders
              WHERE cluster_id = c.id AND resale_lease_id IS NULL AND book_state IS NOT NULL)
          > (SELECT COUNT(*) FROM nodes WHERE cluster_id = c.id AND status <> 'offline')`,
  );
  expect(over).toEqual([]);
  // Migration 0006: no row on the order path names a row that does not exist.
  expect(await danglingReferences(ex.db)).toEqual([]);
}

describe('D3: money always adds up, through the API', () => {
  it(`holds over ${RUNS} random sequences (seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 10, maxLength: 40 }), async (cmds) => {
        for (const c of cmds) {
          await run(c);
          expect(await ledgerTotal(ex.db)).toBe(0);
        }
        await checkInvariants();
      }),
      { seed: SEED, numRuns: RUNS },
    );
    // The sequences did reach what they are about: resales that filled
    // (D27: whole, all-or-nothing), terminations with a refund, failures.
    const seen = await ex.db.query<{ end_reason: string; n: number }>(
      'SELECT end_reason, COUNT(*)::int AS n FROM leases WHERE end_reason IS NOT NULL GROUP BY 1',
    );
    const count = (r: string): number => seen.find((x) => x.end_reason === r)?.n ?? 0;
    if (RUNS >= 12) {
      expect(count('terminated')).toBeGreaterThan(0);
      if (RESELL_WEIGHT > 0) expect(count('resold')).toBeGreaterThan(0);
      // D27: some buyer took a lease ahead of its transfer.
      const ahead = await ex.db.query(
        'SELECT 1 FROM leases WHERE source_lease_id IS NOT NULL AND start_ms > created_ms',
      );
      if (RESELL_WEIGHT > 0) expect(ahead.length).toBeGreaterThan(0);
    }
    const partialResale = await ex.db.query(
      `SELECT o.id FROM orders o WHERE o.resale_lease_id IS NOT NULL
          AND o.filled_gpus NOT IN (0, o.gpu_count)`,
    );
    expect(partialResale).toEqual([]);
  }, 240_000);
});
