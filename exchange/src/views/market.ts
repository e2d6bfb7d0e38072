// The JSON of one book for every account (spec rule 5): the order book view,
// the price estimate (spec "Resources", D22), the anonymous trades (D33) and
// the candles, and their schemas. Money in dollars rounded to cents (D1); a price that
// does not exist (an empty side, no trade yet) is null.

import { GPU_TYPES, ZONES, formatDollars, splitFee } from '@gpux/shared';
import type { GpuType, Zone } from '@gpux/shared';
import { Type } from '@sinclair/typebox';
import type { Static, TUnsafe } from '@sinclair/typebox';

import { Dollars, GpuCount, Nullable, PAGE_FIELDS, StringEnum, Timestamp } from '../http/schema.js';
import { GRANULARITIES } from '../market/candles.js';
import type { CandleRange, CandleRow, Granularity } from '../market/candles.js';
import type { FillRow } from '../market/rows.js';
import type { BookSnapshot, Estimate, Level } from '../matching/index.js';
import { iso } from './format.js';

/** Whether a book takes orders (an operator may halt it: docs/api/admin.md "Books"). */
export const BOOK_STATUSES = ['open', 'halted'] as const;

export const LevelSchema = Type.Object(
  {
    price: Dollars(),
    gpus: Type.Integer({ description: 'GPUs at that price.' }),
    orders: Type.Integer({ description: 'Orders at that price.' }),
  },
  { title: 'Level' },
);

export const OrderBookSchema = Type.Object(
  {
    gpu_type: StringEnum(GPU_TYPES),
    instance_type: Type.Optional(Type.String({ description: 'Echoed when the query named one.' })),
    zone: StringEnum(ZONES),
    status: StringEnum(BOOK_STATUSES, {
      description:
        'halted: an operator halted the book; it takes no new orders (market_halted) and matches nothing until resumed. Open orders can be cancelled.',
    }),
    timestamp: Timestamp(),
    market_depth: Type.Object({
      best_bid: Nullable(Dollars()),
      best_ask: Nullable(Dollars()),
      spread: Nullable(Dollars('Best ask minus best bid.')),
      mid_price: Nullable(Dollars('Average of best bid and best ask, half-even cent.')),
    }),
    bids: Type.Array(LevelSchema, { description: 'Highest price first.' }),
    asks: Type.Array(LevelSchema, { description: 'Lowest price first.' }),
    last_trade: Nullable(
      Type.Object({ price: Dollars(), gpus: Type.Integer(), timestamp: Timestamp() }),
    ),
    volume_24h: Type.Integer({ description: 'GPUs traded over the last 24 hours.' }),
    sequence: Type.Integer({
      minimum: 0,
      description:
        'The live feed’s number of the last update this book includes (GET /v1/stream): events numbered above it are newer. It may already include a few of them, which applied again change nothing (docs/api/market-data.md).',
    }),
  },
  { title: 'OrderBook', description: 'The order book of one GPU type and zone.' },
);
export type OrderBookJson = Static<typeof OrderBookSchema>;

const CostBreakdownSchema = Type.Object(
  {
    compute_cost: Dollars(),
    platform_fee: Dollars('10% of compute cost.'),
    total_cost: Dollars('compute_cost + platform_fee.'),
  },
  { title: 'CostBreakdown' },
);

export const EstimateSchema = Type.Object(
  {
    gpu_type: StringEnum(GPU_TYPES),
    gpu_count: GpuCount(),
    zone: StringEnum(ZONES),
    duration_hours: Type.Integer(),
    estimated_price: Nullable(Dollars('Weighted average price per GPU-hour.')),
    best_ask: Nullable(Dollars()),
    worst_fill_price: Nullable(Dollars('Highest price paid if filled now.')),
    total_available: Type.Integer({ description: 'GPUs the caller could buy on the ask side.' }),
    sufficient_liquidity: Type.Boolean(),
    cost_breakdown: CostBreakdownSchema,
    total_cost: Dollars('The same as cost_breakdown.total_cost (fee included).'),
    fills: Type.Array(Type.Object({ price: Dollars(), gpus: Type.Integer() })),
    missing_gpus: Type.Optional(Type.Integer({ description: 'When liquidity is insufficient.' })),
    timestamp: Timestamp(),
  },
  { title: 'Estimate', description: 'What a market buy would pay now.' },
);
export type EstimateJson = Static<typeof EstimateSchema>;

export const TradesSchema = Type.Object(
  {
    gpu_type: StringEnum(GPU_TYPES),
    zone: StringEnum(ZONES),
    trades: Type.Array(
      Type.Object({ price: Dollars(), gpus: Type.Integer(), timestamp: Timestamp() }),
      { description: 'Anonymous fills, newest first.' },
    ),
    ...PAGE_FIELDS,
  },
  { title: 'Trades' },
);
export type TradesJson = Static<typeof TradesSchema>;

/** Seconds per candle: one of GRANULARITIES. */
export const GranularitySchema = (description: string): TUnsafe<Granularity> =>
  Type.Unsafe<Granularity>({ type: 'integer', enum: [...GRANULARITIES], description });

export const CandlesSchema = Type.Object(
  {
    gpu_type: StringEnum(GPU_TYPES),
    zone: StringEnum(ZONES),
    granularity: GranularitySchema('Seconds per candle, as asked.'),
    start: Timestamp('The start of the first interval covered (start rounded down to one).'),
    end: Timestamp(
      'The end of the last interval covered (end rounded up to one); the next range starts here.',
    ),
    candles: Type.Array(
      Type.Object(
        {
          time: Timestamp(
            'The interval’s start: it holds the trades from then until time + granularity, the end excluded.',
          ),
          open: Dollars('Price per GPU-hour of its first trade.'),
          high: Dollars('Highest price per GPU-hour.'),
          low: Dollars('Lowest price per GPU-hour.'),
          close: Dollars(
            'Price per GPU-hour of its last trade (so far, while the interval lasts).',
          ),
          volume_gpus: Type.Integer({ description: 'GPUs traded.' }),
          volume_gpu_hours: Type.Integer({
            description: 'GPU-hours traded: each trade’s GPUs times its lease hours.',
          }),
          trades: Type.Integer({ description: 'How many trades.' }),
        },
        { title: 'Candle' },
      ),
      { description: 'Oldest first; intervals without trades are left out.' },
    ),
  },
  { title: 'Candles', description: 'Open, high, low, close and volume of one book per interval.' },
);
export type CandlesJson = Static<typeof CandlesSchema>;

function levels(ls: readonly Level[]): { price: number; gpus: number; orders: number }[] {
  return ls.map((l) => ({ price: formatDollars(l.price), gpus: l.gpus, orders: l.orders }));
}

function dollarsOrNull(c: number | null): number | null {
  return c === null ? null : formatDollars(c);
}

export function orderBookView(
  book: { gpuType: GpuType; zone: Zone; instanceType: string | undefined; halted: boolean },
  now: number,
  snap: BookSnapshot,
  volume24h: number,
  sequence: number,
): OrderBookJson {
  return {
    gpu_type: book.gpuType,
    ...(book.instanceType === undefined ? {} : { instance_type: book.instanceType }),
    zone: book.zone,
    status: book.halted ? 'halted' : 'open',
    timestamp: iso(now),
    market_depth: {
      best_bid: dollarsOrNull(snap.bestBid),
      best_ask: dollarsOrNull(snap.bestAsk),
      spread: dollarsOrNull(snap.spread),
      mid_price: dollarsOrNull(snap.midPrice),
    },
    bids: levels(snap.bids),
    asks: levels(snap.asks),
    last_trade:
      snap.lastTrade === null
        ? null
        : {
            price: formatDollars(snap.lastTrade.price),
            gpus: snap.lastTrade.gpus,
            timestamp: iso(snap.lastTrade.at),
          },
    volume_24h: volume24h,
    sequence,
  };
}

export function estimateView(
  q: { gpu_type: GpuType; gpu_count: number; zone: Zone; duration_hours: number },
  now: number,
  est: Estimate,
): EstimateJson {
  const compute = est.computeCostCents;
  const { fee } = splitFee(compute);
  const total = formatDollars(compute + fee);
  return {
    gpu_type: q.gpu_type,
    gpu_count: q.gpu_count,
    zone: q.zone,
    duration_hours: q.duration_hours,
    estimated_price: dollarsOrNull(est.estimatedPrice),
    best_ask: dollarsOrNull(est.bestAsk),
    worst_fill_price: dollarsOrNull(est.worstFillPrice),
    total_available: est.totalAvailable,
    sufficient_liquidity: est.sufficientLiquidity,
    cost_breakdown: {
      compute_cost: formatDollars(compute),
      platform_fee: formatDollars(fee),
      total_cost: total,
    },
    // D22: also at top level, the same value (fee included).
    total_cost: total,
    fills: est.fills.map((f) => ({ price: formatDollars(f.price), gpus: f.gpus })),
    ...(est.sufficientLiquidity ? {} : { missing_gpus: est.missingGpus }),
    timestamp: iso(now),
  };
}

export function tradesView(
  q: { gpu_type: GpuType; zone: Zone; limit: number; offset: number },
  page: { rows: readonly FillRow[]; total: number },
): TradesJson {
  return {
    gpu_type: q.gpu_type,
    zone: q.zone,
    // D33: anonymous: no order, lease or account ids.
    trades: page.rows.map((f) => ({
      price: formatDollars(f.price_cents),
      gpus: f.gpus,
      timestamp: iso(f.at_ms),
    })),
    total: page.total,
    limit: q.limit,
    offset: q.offset,
  };
}

export function candlesView(
  q: { gpu_type: GpuType; zone: Zone; granularity: Granularity },
  range: CandleRange,
  rows: readonly CandleRow[],
): CandlesJson {
  return {
    gpu_type: q.gpu_type,
    zone: q.zone,
    granularity: q.granularity,
    start: iso(range.startMs),
    end: iso(range.endMs),
    candles: rows.map((r) => ({
      time: iso(r.start_ms),
      open: formatDollars(r.open_cents),
      high: formatDollars(r.high_cents),
      low: formatDollars(r.low_cents),
      close: formatDollars(r.close_cents),
      volume_gpus: r.gpus,
      volume_gpu_hours: r.gpu_hours,
      trades: r.trades,
    })),
  };
}
