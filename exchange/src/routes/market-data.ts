// GET /v1/orderbook (spec, D22), GET /v1/prices/estimate (spec, D17, D22)
// and GET /v1/trades (D33): views of one book, for every account (rule 5).

import {
  GPU_TYPES,
  GPUS_PER_NODE,
  GpuxError,
  HOUR_MS,
  MAX_DURATION_HOURS,
  ZONES,
  formatDollars,
  splitFee,
} from '@gpux/shared';
import type { GpuType, Zone } from '@gpux/shared';
import type { FastifyInstance } from 'fastify';

import { callerOf, requireScope } from '../auth/authenticate.js';
import type { Level } from '../matching/index.js';
import { listTrades, volumeSince } from '../market/queries.js';
import type { RouteContext } from '../services.js';
import { PAGE_QUERY } from './paging.js';

const GPU_TYPE = { type: 'string', enum: [...GPU_TYPES] } as const;
const ZONE = { type: 'string', enum: [...ZONES] } as const;
/** D22: `<gpu_count>x<gpu_type>`, e.g. 8xh100. */
const INSTANCE_TYPE = new RegExp(`^([1-9][0-9]{0,5})x(${GPU_TYPES.join('|')})$`);

const orderbookQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['zone'],
  properties: {
    gpu_type: GPU_TYPE,
    instance_type: { type: 'string', minLength: 1, maxLength: 40 },
    zone: ZONE,
    depth: { type: 'integer', minimum: 1, maximum: 50, default: 10 },
  },
} as const;

const estimateQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['gpu_type', 'gpu_count', 'zone'],
  properties: {
    gpu_type: GPU_TYPE,
    gpu_count: { type: 'integer', minimum: GPUS_PER_NODE, maximum: 80_000, multipleOf: 8 },
    zone: ZONE,
    duration_hours: { type: 'integer', minimum: 1, maximum: MAX_DURATION_HOURS, default: 24 },
  },
} as const;

const tradesQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['gpu_type', 'zone'],
  properties: { gpu_type: GPU_TYPE, zone: ZONE, ...PAGE_QUERY },
} as const;

function levels(ls: readonly Level[]): { price: number; gpus: number; orders: number }[] {
  return ls.map((l) => ({ price: formatDollars(l.price), gpus: l.gpus, orders: l.orders }));
}

function dollarsOrNull(c: number | null): number | null {
  return c === null ? null : formatDollars(c);
}

/** D22: gpu_type from `gpu_type` or from `instance_type`; both must agree. */
function gpuTypeOf(q: { gpu_type?: GpuType; instance_type?: string }): GpuType {
  if (q.instance_type !== undefined) {
    const m = INSTANCE_TYPE.exec(q.instance_type);
    const t = m?.[2] as GpuType | undefined;
    if (t === undefined || Number(m?.[1]) % GPUS_PER_NODE !== 0) {
      throw new GpuxError(
        'invalid_request',
        `instance_type must look like 8xh100 (<gpu_count>x<gpu_type>), got "${q.instance_type}"`,
      );
    }
    if (q.gpu_type !== undefined && q.gpu_type !== t) {
      throw new GpuxError('invalid_request', 'gpu_type and instance_type name different GPU types');
    }
    return t;
  }
  if (q.gpu_type === undefined) {
    throw new GpuxError('invalid_request', 'gpu_type (or instance_type) is required');
  }
  return q.gpu_type;
}

export function marketDataRoutes(
  app: FastifyInstance,
  { db, limiter, market, directory }: RouteContext,
): void {
  app.get<{
    Querystring: { gpu_type?: GpuType; instance_type?: string; zone: Zone; depth: number };
  }>(
    '/v1/orderbook',
    {
      schema: { querystring: orderbookQuery },
      preValidation: requireScope(directory, limiter, 'read'),
    },
    async (request) => {
      const q = request.query;
      const gpuType = gpuTypeOf(q);
      const now = market.clock.now();
      const snap = market.writer(gpuType, q.zone).view.book.snapshot(q.depth);
      const volume = await volumeSince(db, gpuType, q.zone, now - 24 * HOUR_MS);
      return {
        gpu_type: gpuType,
        ...(q.instance_type === undefined ? {} : { instance_type: q.instance_type }),
        zone: q.zone,
        timestamp: new Date(now).toISOString(),
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
                timestamp: new Date(snap.lastTrade.at).toISOString(),
              },
        volume_24h: volume,
      };
    },
  );

  app.get<{
    Querystring: { gpu_type: GpuType; gpu_count: number; zone: Zone; duration_hours: number };
  }>(
    '/v1/prices/estimate',
    {
      schema: { querystring: estimateQuery },
      preValidation: requireScope(directory, limiter, 'read'),
    },
    (request) => {
      const q = request.query;
      const caller = callerOf(request);
      const now = market.clock.now();
      // D17: the caller's own asks are not liquidity it could buy.
      const est = market.writer(q.gpu_type, q.zone).view.book.estimate(
        {
          nodes: q.gpu_count / GPUS_PER_NODE,
          durationHours: q.duration_hours,
          accountId: caller.accountId,
          orgId: caller.organizationId,
        },
        now,
      );
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
        timestamp: new Date(now).toISOString(),
      };
    },
  );

  app.get<{ Querystring: { gpu_type: GpuType; zone: Zone; limit: number; offset: number } }>(
    '/v1/trades',
    {
      schema: { querystring: tradesQuery },
      preValidation: requireScope(directory, limiter, 'read'),
    },
    async (request) => {
      const { gpu_type, zone, limit, offset } = request.query;
      const { rows, total } = await listTrades(db, gpu_type, zone, limit, offset);
      return {
        gpu_type,
        zone,
        // D33: anonymous: no order, lease or account ids.
        trades: rows.map((f) => ({
          price: formatDollars(f.price_cents),
          gpus: f.gpus,
          timestamp: new Date(f.at_ms).toISOString(),
        })),
        total,
        limit,
        offset,
      };
    },
  );
}
