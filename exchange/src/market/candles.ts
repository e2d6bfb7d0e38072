// OHLC candles of one book (GET /v1/candles, docs/api/orders.md), computed
// in PostgreSQL from the fills table: nothing of them is kept elsewhere, so
// they agree with the trades they sum up, after a restart or on another
// process too.
//
// Intervals are aligned on the Unix epoch (a 6-hour candle starts at 00:00,
// 06:00, 12:00 or 18:00 UTC) and named by their start; an interval holds the
// fills with start <= at_ms < start + granularity. A request covers whole
// intervals: from the one holding `start` to the one holding the last
// instant before `end`.

import { fieldError } from '@gpux/shared';
import type { GpuType, Zone } from '@gpux/shared';

import type { Database, Queryable } from '../db/database.js';

/** Seconds per candle a request may ask for (those of Coinbase's candles). */
export const GRANULARITIES = [60, 300, 900, 3600, 21600, 86400] as const;
export type Granularity = (typeof GRANULARITIES)[number];

/** The most intervals one request may cover. */
export const MAX_CANDLES = 300;

/** The intervals a request covers, [startMs, endMs) in steps of stepMs. */
export interface CandleRange {
  readonly startMs: number;
  readonly endMs: number;
  readonly stepMs: number;
}

export interface CandleQuery {
  readonly granularity: Granularity;
  /** Milliseconds since the epoch, as the request gave them (undefined: the default). */
  readonly start: number | undefined;
  readonly end: number | undefined;
}

/**
 * The intervals of a request. `end` defaults to the end of the interval
 * holding now (the interval in progress is covered, its trades up to now
 * included), `start` to MAX_CANDLES intervals back from `end`. Refuses
 * start >= end, and a range of more than MAX_CANDLES intervals
 * (invalid_request on `start`; the message gives the limit).
 */
export function candleRange(q: CandleQuery, now: number): CandleRange {
  const stepMs = q.granularity * 1000;
  const end = q.end ?? Math.floor(now / stepMs) * stepMs + stepMs;
  // The interval after the last one covered (end is not in the range).
  const endMs = Math.ceil(end / stepMs) * stepMs;
  if (q.start !== undefined && q.start >= end) {
    throw fieldError(
      'start',
      'conflict',
      q.end === undefined
        ? `start must be before end, which is ${new Date(end).toISOString()} when not given (the end of the interval in progress)`
        : 'start must be before end',
    );
  }
  const startMs =
    q.start === undefined ? endMs - MAX_CANDLES * stepMs : Math.floor(q.start / stepMs) * stepMs;
  const count = (endMs - startMs) / stepMs;
  if (count > MAX_CANDLES) {
    throw fieldError(
      'start',
      'conflict',
      `start to end spans ${count.toLocaleString('en')} intervals of ${q.granularity} s, ` +
        `and a request covers at most ${MAX_CANDLES}: narrow the range or take a larger granularity`,
    );
  }
  return { startMs, endMs, stepMs };
}

/** One interval with trades; money in integer cents per GPU-hour (D1). */
export interface CandleRow {
  /** The interval's start. */
  readonly start_ms: number;
  readonly open_cents: number;
  readonly high_cents: number;
  readonly low_cents: number;
  readonly close_cents: number;
  /** Σ gpus of its fills. */
  readonly gpus: number;
  /** Σ gpus × lease hours of its fills. */
  readonly gpu_hours: number;
  readonly trades: number;
}

/**
 * The candles of one book over a range, oldest first, intervals without a
 * fill left out (candleRows), with PostgreSQL's JIT compilation off: the
 * planner prices the query at hundreds of thousands (it expects thousands
 * of fills in each of hundreds of intervals), above the JIT threshold, and
 * compiling took a quarter of the answer's time for nothing, the work
 * being a few small aggregates per interval (docs/benchmarks.md, "Candles").
 */
export async function candlesOf(
  db: Database,
  gpuType: GpuType,
  zone: Zone,
  range: CandleRange,
): Promise<CandleRow[]> {
  return db.transaction(async (tx) => {
    await tx.query('SET LOCAL jit = off');
    return candleRows(tx, gpuType, zone, range);
  });
}

/**
 * The query of candlesOf. Each interval is three ranges of fills_book, read
 * from the index alone (migration 0018): its first fill by (at_ms,
 * book_seq) for the open, its last for the close, and the sums of all of
 * them. No fill is sorted, and none outside the range is read. An interval
 * without a fill has no first fill, so the cross join drops it.
 */
export async function candleRows(
  q: Queryable,
  gpuType: GpuType,
  zone: Zone,
  range: CandleRange,
): Promise<CandleRow[]> {
  const inInterval = 'gpu_type = $1 AND zone = $2 AND at_ms >= s.t AND at_ms < s.t + $5';
  return q.query<CandleRow>(
    `SELECT s.t AS start_ms, o.price_cents AS open_cents, a.high_cents, a.low_cents,
            c.price_cents AS close_cents, a.gpus, a.gpu_hours, a.trades
       FROM generate_series($3::bigint, $4::bigint - $5::bigint, $5::bigint) AS s (t)
      CROSS JOIN LATERAL (SELECT price_cents FROM fills WHERE ${inInterval}
                           ORDER BY at_ms, book_seq LIMIT 1) o
      CROSS JOIN LATERAL (SELECT price_cents FROM fills WHERE ${inInterval}
                           ORDER BY at_ms DESC, book_seq DESC LIMIT 1) c
      CROSS JOIN LATERAL (SELECT max(price_cents) AS high_cents, min(price_cents) AS low_cents,
                                 sum(gpus) AS gpus, sum(gpus * hours) AS gpu_hours,
                                 count(*) AS trades
                            FROM fills WHERE ${inInterval}) a
      ORDER BY s.t`,
    [gpuType, zone, range.startMs, range.endMs, range.stepMs],
  );
}
