// npm run bench -- candles [--fills N] [--runs R] [--keep]
//
// What GET /v1/candles costs on a busy book: a database of its own on the
// local PostgreSQL, seeded with set-based SQL with N fills (default
// 1,000,000) of one book in one day, in pairs that share a millisecond (a
// buy that took two asks), interleaved in the table with a quarter as many
// fills of eight other books; then VACUUM ANALYZE, as autovacuum would have
// done by the time anyone asks.
//
// Timed, R times each after a warm-up, in this process:
// - the largest request: MAX_CANDLES 1-minute candles (market/candles.ts, the
//   route's query);
// - the whole day of 1-minute candles, 1,440 of them: as many requests as
//   the limit takes (five), one after another;
// - the peer: the same requests answered the naive way, every fill of the
//   range read into Node in (at_ms, book_seq) order and summed there. Its
//   candles must be ours exactly, which checks our SQL on a million fills;
// - our query again on the index as it was before migration 0018 (no
//   included columns: the fills table read for every fill), in a transaction
//   rolled back afterwards: what 0018 buys.
//
// The last line: `candles: <N> fills in a day | 300 × 1 min p50 <a> ms |
// day of 1 min (5 requests) p50 <b> ms | naive peer p50 <c> ms | ratio <c/b>x`.
// Figures: docs/benchmarks.md, "Candles".

import os from 'node:os';
import { performance } from 'node:perf_hooks';

import type { Database, Queryable } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { openPostgres } from '../src/db/postgres.js';
import { createDatabase, uniqueDatabaseName } from '../src/db/testing/admin-database.js';
import { MAX_CANDLES, candleRange, candleRows, candlesOf } from '../src/market/candles.js';
import type { CandleRange, CandleRow } from '../src/market/candles.js';
import { benchFail, parseCounts } from './bench-args.js';
import { fmtRatio } from './stats.js';

const USAGE = 'usage: npm run bench -- candles [--fills N] [--runs R] [--keep]';
const DAY = 86_400_000;
const MIN = 60_000;
/** The day of the fills: 2026-11-22 UTC. */
const T0 = Date.UTC(2026, 10, 22);

interface Options {
  readonly fills: number;
  readonly runs: number;
  readonly keep: boolean;
}

function fail(message: string, code = 1): never {
  benchFail('candles', message, code);
}

function parseArgs(argv: readonly string[]): Options {
  const o = parseCounts('candles', argv, { fills: 1_000_000, runs: 5 }, USAGE);
  if (o.fills < 1 || o.runs < 1) fail('--fills and --runs must be at least 1', 2);
  return o;
}

/**
 * Row k of (N + N/4): every fifth row is another book's (b200 or b300, in
 * us-east-1 or eu-west-1), the others the measured book's (h100 in
 * us-west-1), whose i-th fill shares its millisecond with its pair.
 */
function seedSql(n: number): string {
  const other = Math.floor(n / 4);
  return `
INSERT INTO fills (id, gpu_type, zone, buy_order_id, sell_order_id, lease_id, gpus, price_cents,
                   hours, at_ms, book_seq)
SELECT 'fil_' || k,
       CASE WHEN mine THEN 'h100' ELSE (ARRAY['b200', 'b300'])[1 + k % 2] END::gpux_gpu_type,
       CASE WHEN mine THEN 'us-west-1' ELSE (ARRAY['us-east-1', 'eu-west-1'])[1 + (k / 5) % 2] END::gpux_zone,
       'ord_b' || k, 'ord_s' || k, 'lse_' || k,
       8 * (1 + k % 4), 150 + (k * 7919) % 200, 1 + k % 24,
       CASE WHEN mine THEN ${T0} + ((i - i % 2) * ${DAY}::bigint) / ${n}
            ELSE ${T0} + (k * ${DAY}::bigint) / ${n + other} END,
       CASE WHEN mine THEN i + 1 ELSE k + 1 END
  FROM (SELECT k, k % 5 <> 4 OR k / 5 >= ${other} AS mine,
               k - LEAST(k / 5, ${other}) AS i
          FROM generate_series(0::bigint, ${n + other - 1}) k) s;
`;
}

/** The naive peer: every fill of the range into Node, in order, summed by interval there. */
async function naiveCandles(db: Queryable, r: CandleRange): Promise<CandleRow[]> {
  const fills = await db.query<{ p: number; g: number; h: number; t: number }>(
    `SELECT price_cents AS p, gpus AS g, hours AS h, at_ms AS t FROM fills
      WHERE gpu_type = 'h100' AND zone = 'us-west-1' AND at_ms >= $1 AND at_ms < $2
      ORDER BY at_ms, book_seq`,
    [r.startMs, r.endMs],
  );
  const out: CandleRow[] = [];
  let c: { -readonly [K in keyof CandleRow]: number } | undefined;
  for (const f of fills) {
    const start = Math.floor(f.t / r.stepMs) * r.stepMs;
    if (c?.start_ms !== start) {
      c = {
        start_ms: start,
        open_cents: f.p,
        high_cents: f.p,
        low_cents: f.p,
        close_cents: f.p,
        gpus: 0,
        gpu_hours: 0,
        trades: 0,
      };
      out.push(c);
    }
    c.high_cents = Math.max(c.high_cents, f.p);
    c.low_cents = Math.min(c.low_cents, f.p);
    c.close_cents = f.p;
    c.gpus += f.g;
    c.gpu_hours += f.g * f.h;
    c.trades++;
  }
  return out;
}

type Answer<D> = (db: D, r: CandleRange) => Promise<CandleRow[]>;
const ours: Answer<Database> = (db, r) => candlesOf(db, 'h100', 'us-west-1', r);

/** The day of 1-minute candles as the limit allows: ranges of MAX_CANDLES intervals. */
function dayRanges(): CandleRange[] {
  const out: CandleRange[] = [];
  for (let start = T0; start < T0 + DAY; start += MAX_CANDLES * MIN) {
    const end = Math.min(start + MAX_CANDLES * MIN, T0 + DAY);
    out.push(candleRange({ granularity: 60, start, end }, end));
  }
  return out;
}

interface Timed {
  readonly ms: number[];
  readonly rows: CandleRow[];
}

/** `runs` times after a warm-up: the wall time of answering `ranges` one after another. */
async function time<D>(
  db: D,
  answer: Answer<D>,
  ranges: readonly CandleRange[],
  runs: number,
): Promise<Timed> {
  const rows: CandleRow[] = [];
  for (const r of ranges) rows.push(...(await answer(db, r)));
  const ms: number[] = [];
  for (let k = 0; k < runs; k++) {
    globalThis.gc?.();
    const t0 = performance.now();
    for (const r of ranges) await answer(db, r);
    ms.push(performance.now() - t0);
  }
  return { ms, rows };
}

function p50(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)] ?? NaN;
}

/**
 * `fn` on fills_book as migration 0005 made it (no included columns), in a
 * transaction rolled back afterwards.
 */
async function withIndexOf0005<T>(db: Database, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  const rollback = new Error('rollback');
  let out: T | undefined;
  try {
    await db.transaction(async (tx) => {
      await tx.exec(
        `DROP INDEX fills_book;
         CREATE INDEX fills_book ON fills (gpu_type, zone, at_ms DESC, book_seq DESC);
         ANALYZE fills;`,
      );
      out = await fn(tx);
      throw rollback;
    });
  } catch (err) {
    if (err !== rollback) throw err;
  }
  return out as T;
}

const fmt = (xs: readonly number[]): string =>
  `p50 ${p50(xs).toFixed(1)} ms (${xs.map((x) => x.toFixed(1)).join(', ')})`;

export async function runCandlesBench(argv: readonly string[]): Promise<void> {
  const o = parseArgs(argv);
  const cpus = os.cpus();
  console.log(
    `bench candles: ${o.fills.toLocaleString('en')} fills of h100/us-west-1 in one day (+ ${Math.floor(o.fills / 4).toLocaleString('en')} of other books), ${o.runs} runs each; ` +
      `node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? 'unknown cpu'}, load average ${os.loadavg()[0]?.toFixed(1)}`,
  );
  const scratch = await createDatabase(uniqueDatabaseName('gpux_candles'));
  const stop = (): void => void scratch.drop().finally(() => process.exit(130));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const db = openPostgres(scratch.url, 1);
  try {
    const t = performance.now();
    await migrate(db);
    await db.exec(seedSql(o.fills));
    await db.exec('VACUUM ANALYZE fills');
    console.log(
      `  PostgreSQL ${scratch.serverVersion}, database ${scratch.name}, seeded in ${((performance.now() - t) / 1000).toFixed(1)} s`,
    );

    const most = [candleRange({ granularity: 60, start: T0, end: T0 + MAX_CANDLES * MIN }, T0)];
    const day = dayRanges();
    const oneOurs = await time(db, ours, most, o.runs);
    const dayOurs = await time(db, ours, day, o.runs);
    const dayPeer = await time(db, naiveCandles, day, o.runs);
    const fills = dayOurs.rows.reduce((s, c) => s + c.trades, 0);
    if (dayOurs.rows.length > 1440 || fills !== o.fills) {
      fail(
        `the day has ${dayOurs.rows.length} candles of ${fills} fills, not at most 1,440 of ${o.fills}`,
      );
    }
    if (JSON.stringify(dayPeer.rows) !== JSON.stringify(dayOurs.rows)) {
      fail('the naive peer’s candles differ from the query’s');
    }
    const perCandle = Math.round(o.fills / 1440);
    console.log(
      `  ${MAX_CANDLES} × 1 min (${(MAX_CANDLES * perCandle).toLocaleString('en')} fills, one request): ${fmt(oneOurs.ms)}`,
    );
    console.log(`  day of 1 min (1,440 candles, ${day.length} requests): ${fmt(dayOurs.ms)}`);
    console.log(
      `  naive peer, the same ${day.length} requests (fills into Node, same candles): ${fmt(dayPeer.ms)}`,
    );

    // The same query on the index of migration 0005 (no included columns).
    // As candlesOf runs it (JIT off), in the transaction that swapped the index.
    const before = await withIndexOf0005(db, async (tx) => {
      await tx.query('SET LOCAL jit = off');
      return time(tx, (q, r) => candleRows(q, 'h100', 'us-west-1', r), day, o.runs);
    });
    console.log(`  day of 1 min without 0018's included columns: ${fmt(before.ms)}`);

    const ratio = p50(dayPeer.ms) / p50(dayOurs.ms);
    console.log(
      `candles: ${o.fills.toLocaleString('en')} fills in a day | ${MAX_CANDLES} × 1 min p50 ${p50(oneOurs.ms).toFixed(1)} ms | ` +
        `day of 1 min (${day.length} requests) p50 ${p50(dayOurs.ms).toFixed(1)} ms | ` +
        `naive peer p50 ${p50(dayPeer.ms).toFixed(1)} ms | ratio ${fmtRatio(ratio)}x`,
    );
  } finally {
    await db.close();
    if (o.keep) console.log(`  kept database ${scratch.name} (${scratch.url})`);
    else await scratch.drop();
  }
}
