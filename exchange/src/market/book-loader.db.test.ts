// Start-up (docs/architecture.md flow 5): on PostgreSQL every query that rebuilds
// the books is driven by an index, so a restart costs what is open rather
// than all that ever traded; and on both engines (D34) a book loaded again
// is the book its writer had in memory.

import type { GpuType, Zone } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Database, Queryable } from '../db/database.js';
import { loadBook } from './book-loader.js';
import type { BookState } from './book-state.js';
import type { ClusterState } from './capacity.js';
import { OPEN_TIMEOUT_MS } from '../db/testing/fresh-database.js';
import { Market } from './market.js';
import { testExchange } from './testing/test-exchange.js';
import type { Party, TestExchange } from './testing/test-exchange.js';

let ex: TestExchange;

async function place(who: Party, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await ex.call('POST', '/v1/orders', who.token, body);
  expect(r.status, r.body).toBe(200);
  return r.json;
}

const sell = (price: number, gpus: number, zone = 'us-west-1'): Record<string, unknown> => ({
  side: 'sell',
  gpu_type: 'h100',
  zone,
  gpu_count: gpus,
  duration_hours: 48,
  limit_price: price,
});

const buy = (extra: Record<string, unknown>, zone = 'us-west-1'): Record<string, unknown> => ({
  side: 'buy',
  gpu_type: 'h100',
  zone,
  gpu_count: 8,
  duration_hours: 4,
  ...extra,
});

/**
 * A book with history and open state of every kind: closed orders (filled,
 * cancelled), fills, ended and live leases, a resale, resting orders on both
 * sides, and clusters, some without orders. Returns the book's zone.
 */
async function trade(zone: Zone): Promise<void> {
  const p1 = await ex.account(`p1-${zone}`);
  const p2 = await ex.account(`p2-${zone}`);
  const b = await ex.account(`buyer-${zone}`);
  const r = await ex.account(`reseller-${zone}`);
  await ex.cluster(p1, 12, 'h100', zone);
  await ex.cluster(p2, 12, 'h100', zone);
  await ex.cluster(await ex.account(`p3-${zone}`), 4, 'h100', zone); // no orders
  await place(p1, sell(2, 16, zone));
  await place(p2, sell(2, 16, zone));
  await place(p2, sell(2.2, 24, zone));
  // One step, two fills at one time (two sells of $2): book_seq breaks the tie.
  const both = await place(b, buy({ gpu_count: 24 }, zone));
  expect(both['status']).toBe('filled');
  ex.clock.advance(60_000);
  const kept = await place(r, buy({}, zone));
  const ended = await place(b, buy({}, zone));
  const endedLease = (await ex.call('GET', '/v1/leases?limit=100', b.token)).json['leases'] as {
    lease_id: string;
  }[];
  expect(endedLease.length).toBeGreaterThan(0);
  ex.clock.advance(60_000);
  expect((await ex.call('DELETE', `/v1/leases/${endedLease[0]?.lease_id}`, b.token)).status).toBe(
    200,
  );
  const keptLease = (await ex.call('GET', `/v1/orders/${String(kept['order_id'])}`, r.token)).json[
    'lease_id'
  ] as string;
  await ex.leaseReady(keptLease, { gpu_type: 'h100', zone }); // D27: only an active lease is resold
  const resale = await ex.call('POST', `/v1/leases/${keptLease}/resell`, r.token, {
    limit_price: 2.5,
  });
  expect(resale.status, resale.body).toBe(200);
  expect(ended['status']).toBe('filled');
  const cancelled = await place(b, buy({ limit_price: 1.2 }, zone));
  expect(
    (await ex.call('DELETE', `/v1/orders/${String(cancelled['order_id'])}`, b.token)).status,
  ).toBe(200);
  await place(b, buy({ limit_price: 1.5, gpu_count: 16 }, zone));
  // The last event is an order accepted after the last fill: the clock's source.
  ex.clock.advance(60_000);
  await place(b, buy({ limit_price: 1.6, allow_partial: true }, zone));
}

/** An exchange on `engine` for the enclosing describe (as `ex`), trade() in each zone given. */
function tradedExchange(engine: 'postgres' | 'pglite', zones: readonly Zone[]): void {
  let mine: TestExchange | undefined;
  beforeAll(async () => {
    mine = await testExchange({ engine });
    ex = mine;
    for (const zone of zones) await trade(zone);
    // As autovacuum would have by then: the planner sees the rows.
    await ex.db.exec('ANALYZE');
  }, OPEN_TIMEOUT_MS);
  afterAll(async () => {
    await mine?.close();
  });
}

/** The statements and parameters `fn` sends through `db`, transactions included. */
async function recorded(
  db: Database,
  fn: (db: Database) => Promise<void>,
): Promise<{ sql: string; params: readonly unknown[] }[]> {
  const seen: { sql: string; params: readonly unknown[] }[] = [];
  const spy = (q: Queryable): Queryable => ({
    query: (sql, params, options) => {
      seen.push({ sql, params: params ?? [] });
      return q.query(sql, params, options);
    },
    exec: (sql) => q.exec(sql),
  });
  await fn({
    ...db,
    ...spy(db),
    transaction: (inner) => db.transaction((tx) => inner(spy(tx))),
  });
  return seen;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

function nodesOf(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];
}

const INDEX_SCANS = new Set(['Index Scan', 'Index Only Scan', 'Bitmap Index Scan']);

describe('start-up reads on PostgreSQL (docs/architecture.md flow 5)', () => {
  tradedExchange('postgres', ['us-west-1', 'eu-west-1']);

  it('are each driven by an index: no Seq Scan, no index read whole (enable_seqscan off)', async () => {
    const queries = await recorded(ex.db, async (db) => {
      const market = await Market.open(db, { tickIntervalMs: 0 });
      await market.close();
    });
    const tables = new Set<string>();
    for (const { sql, params } of queries) {
      const plan = await ex.db.transaction(async (tx) => {
        await tx.query('SET LOCAL enable_seqscan = off');
        const [row] = await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
          `EXPLAIN (FORMAT JSON) ${sql}`,
          params,
        );
        return row?.['QUERY PLAN'][0].Plan;
      });
      expect(plan, sql).toBeDefined();
      for (const node of nodesOf(plan!)) {
        if (node['Relation Name'] !== undefined) tables.add(node['Relation Name']);
        expect(node['Node Type'], sql).not.toBe('Seq Scan');
        if (INDEX_SCANS.has(node['Node Type'])) {
          expect(node['Index Cond'], `${node['Index Name']} in ${sql}`).toBeDefined();
        }
      }
    }
    // What a book is rebuilt from: the check above looked at all of it.
    expect([...tables].sort()).toEqual([
      'accounts',
      'book_halts',
      // The live feed's number (feed/sequence.ts).
      'book_sequences',
      'clusters',
      'credit_holds',
      'fills',
      'lease_nodes',
      'leases',
      'nodes',
      'orders',
    ]);
  });
});

/** A cluster as a book sees it, in a form to compare (the search cursor is not state). */
function clusterOf(c: ClusterState): unknown {
  return { ...c, nextFree: undefined, leased: [...c.leased].sort() };
}

/** What a book holds, in a form to compare; clusters apart (below). */
function stateOf(s: BookState): unknown {
  return {
    open: s.book.openOrders(),
    snapshot: s.book.snapshot(100),
    clock: s.book.clock,
    lastTrade: s.book.lastTrade(),
    fillSeq: s.fillSeq,
    orders: [...s.orders.values()].sort((a, b) => a.id.localeCompare(b.id)),
    leases: [...s.leases.values()]
      .map((l) => ({
        ...l,
        nodes: [...l.nodes].sort((a, b) => a.node_id.localeCompare(b.node_id)),
      }))
      .sort((a, b) => a.row.id.localeCompare(b.row.id)),
  };
}

// PGlite is slow to trade on: one book traded there, the other left empty.
describe.each([
  ['PostgreSQL', 'postgres', ['h100', 'us-west-1'], ['h100', 'eu-west-1']],
  ['PGlite', 'pglite', ['h100', 'us-west-1'], ['b300', 'us-east-1']],
] as const)('loadBook on %s', (_name, engine, traded, other) => {
  tradedExchange(engine, [traded[1]]);

  it.each([traded, other] as [GpuType, Zone][])(
    'rebuilds %s/%s as its writer has it: orders, priority, clock, last trade, fill numbers, clusters, leases',
    async (gpuType, zone) => {
      const live = ex.market.writer(gpuType, zone).view;
      const loaded = await loadBook(ex.db, gpuType, zone, { provisioningTimeoutMs: 5 * 60_000 });
      expect(stateOf(loaded)).toEqual(stateOf(live));
      // A running writer learns of a cluster created after it started when
      // the cluster is first used; a load has them all, the others unused.
      for (const [id, c] of loaded.clusters) {
        const known = live.clusters.get(id);
        if (known !== undefined) expect(clusterOf(c)).toEqual(clusterOf(known));
        else
          expect({ leased: c.leased.size, offered: c.openSellNodes }).toEqual({
            leased: 0,
            offered: 0,
          });
      }
      expect([...live.clusters.keys()].every((id) => loaded.clusters.has(id))).toBe(true);
      if (zone === traded[1] && gpuType === traded[0]) {
        expect(live.book.lastTrade()).not.toBeNull();
        expect(live.leases.size).toBeGreaterThan(0);
        expect([...live.leases.values()].some((l) => l.resaleOrderId !== null)).toBe(true);
      }
    },
  );
});
