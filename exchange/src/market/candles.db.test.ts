// The candles query itself (market/candles.ts) on both engines the exchange
// runs on (D34), from fills written directly: open and close by (at_ms,
// book_seq) whatever order the rows were written in, other books left out;
// and on PostgreSQL, its plan: every read of fills from fills_book alone
// (migration 0018), no fill sorted. The route, with trades made by real
// orders: routes/candles.db.test.ts.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Database } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { OPEN_TIMEOUT_MS, TEST_ENGINES } from '../db/testing/fresh-database.js';
import { candleRows, candlesOf } from './candles.js';
import type { CandleRange } from './candles.js';

const T = Date.UTC(2026, 10, 22, 6);
const HOUR = 3_600_000;
let fillNo = 0;

/** A fill as the book's writer would write it; only the columns candles read matter. */
async function fill(
  db: Database,
  f: { at: number; seq: number; cents: number; gpus?: number; hours?: number; zone?: string },
): Promise<void> {
  const id = `fil_${++fillNo}`;
  await db.query(
    `INSERT INTO fills (id, gpu_type, zone, buy_order_id, sell_order_id, lease_id, gpus,
                        price_cents, hours, at_ms, book_seq)
     VALUES ($1, 'h200', $2, 'ord_b', 'ord_s', 'lse_x', $3, $4, $5, $6, $7)`,
    [id, f.zone ?? 'eu-west-1', f.gpus ?? 8, f.cents, f.hours ?? 1, f.at, f.seq],
  );
}

const hours = (n: number): CandleRange => ({ startMs: T, endMs: T + n * HOUR, stepMs: HOUR });

describe.each(TEST_ENGINES)('candlesOf on %s', (_name, open) => {
  let db: Database;
  let done: () => Promise<void>;

  beforeAll(async () => {
    ({ db, done } = await open());
    await migrate(db);
    // 06:00-07:00: written out of order; two fills share a millisecond, the
    // book's order (book_seq) decides which came first.
    await fill(db, { at: T + 10 * 60_000, seq: 4, cents: 260, gpus: 16, hours: 3 });
    await fill(db, { at: T + 10 * 60_000, seq: 3, cents: 250 });
    await fill(db, { at: T, seq: 2, cents: 210 });
    await fill(db, { at: T, seq: 1, cents: 200, hours: 2 });
    await fill(db, { at: T + HOUR - 1, seq: 6, cents: 230 });
    await fill(db, { at: T + HOUR - 1, seq: 5, cents: 190 });
    // 08:00 exactly.
    await fill(db, { at: T + 2 * HOUR, seq: 7, cents: 300, gpus: 24, hours: 720 });
    // Another book, in the same hours.
    await fill(db, { at: T + 30 * 60_000, seq: 1, cents: 999, zone: 'us-east-1' });
  }, OPEN_TIMEOUT_MS);

  afterAll(async () => {
    await done?.();
  });

  it('orders each interval’s fills by time, then by the book’s sequence', async () => {
    expect(await candlesOf(db, 'h200', 'eu-west-1', hours(3))).toEqual([
      {
        start_ms: T,
        open_cents: 200,
        high_cents: 260,
        low_cents: 190,
        close_cents: 230,
        gpus: 8 * 5 + 16,
        gpu_hours: 8 * 2 + 8 + 16 * 3 + 8 + 8 + 8,
        trades: 6,
      },
      {
        start_ms: T + 2 * HOUR,
        open_cents: 300,
        high_cents: 300,
        low_cents: 300,
        close_cents: 300,
        gpus: 24,
        gpu_hours: 24 * 720,
        trades: 1,
      },
    ]);
  });

  it('covers [start, end): a fill at end is the next interval’s', async () => {
    const rows = await candlesOf(db, 'h200', 'eu-west-1', hours(2));
    expect(rows.map((r) => r.start_ms)).toEqual([T]);
    const none = await candlesOf(db, 'h200', 'eu-west-1', {
      startMs: T + HOUR,
      endMs: T + 2 * HOUR,
      stepMs: HOUR,
    });
    expect(none).toEqual([]);
  });

  it('counts only its own book', async () => {
    const [row] = await candlesOf(db, 'h200', 'us-east-1', hours(1));
    expect(row).toMatchObject({ open_cents: 999, close_cents: 999, trades: 1 });
    expect(await candlesOf(db, 'h100', 'eu-west-1', hours(3))).toEqual([]);
  });

  it.runIf(_name === 'PostgreSQL')(
    'reads fills from fills_book alone, and sorts no fill',
    async () => {
      const seen: string[] = [];
      const plan = await db.transaction(async (tx) => {
        // As on a big table: the planner must not prefer a scan of this small one.
        await tx.query('SET LOCAL enable_seqscan = off');
        const spy = {
          query: async <R>(sql: string, params?: readonly unknown[]): Promise<R[]> => {
            seen.push(sql);
            const [row] = await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
              `EXPLAIN (FORMAT JSON) ${sql}`,
              params,
            );
            return [row?.['QUERY PLAN'][0].Plan as R];
          },
          exec: (sql: string) => tx.exec(sql),
        };
        const [p] = await candleRows(spy, 'h200', 'eu-west-1', hours(3));
        return p as unknown as PlanNode;
      });
      expect(seen).toHaveLength(1);
      const nodes = nodesOf(plan);
      const onFills = nodes.filter((n) => n['Relation Name'] === 'fills');
      expect(onFills).toHaveLength(3);
      for (const n of onFills) {
        expect(n).toMatchObject({ 'Node Type': 'Index Only Scan', 'Index Name': 'fills_book' });
      }
      // At most the answer's rows, by interval: never the fills.
      for (const n of nodes.filter((n) => n['Node Type'] === 'Sort')) {
        expect(n['Sort Key']).toEqual(['s.t']);
      }
    },
  );
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Sort Key'?: string[];
  Plans?: PlanNode[];
}

function nodesOf(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];
}
