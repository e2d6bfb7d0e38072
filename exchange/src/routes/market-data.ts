// GET /v1/orderbook (spec, D22), GET /v1/prices/estimate (spec, D17, D22)
// and GET /v1/trades (D33): views of one book, for every account (rule 5).

import {
  GPU_TYPES,
  GPUS_PER_NODE,
  GpuxError,
  HOUR_MS,
  MAX_DURATION_HOURS,
  ZONES,
} from '@gpux/shared';
import type { GpuType } from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { callerOf } from '../auth/authenticate.js';
import { Defaulted, PAGE_QUERY, StringEnum } from '../http/schema.js';
import { listTrades, volumeSince } from '../market/queries.js';
import type { RouteContext } from '../services.js';
import {
  EstimateSchema,
  OrderBookSchema,
  TradesSchema,
  estimateView,
  orderBookView,
  tradesView,
} from '../views/market.js';

/** D22: `<gpu_count>x<gpu_type>`, e.g. 8xh100. */
const INSTANCE_TYPE = new RegExp(`^([1-9][0-9]{0,5})x(${GPU_TYPES.join('|')})$`);

const OrderBookQuery = Type.Object(
  {
    gpu_type: Type.Optional(StringEnum(GPU_TYPES)),
    instance_type: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 40,
        description: 'D22: `<gpu_count>x<gpu_type>` in place of gpu_type.',
      }),
    ),
    zone: StringEnum(ZONES),
    depth: Defaulted(Type.Integer({ minimum: 1, maximum: 50, default: 10 })),
  },
  { additionalProperties: false },
);

const EstimateQuery = Type.Object(
  {
    gpu_type: StringEnum(GPU_TYPES),
    gpu_count: Type.Integer({ minimum: GPUS_PER_NODE, maximum: 80_000, multipleOf: 8 }),
    zone: StringEnum(ZONES),
    duration_hours: Defaulted(
      Type.Integer({ minimum: 1, maximum: MAX_DURATION_HOURS, default: 24 }),
    ),
  },
  { additionalProperties: false },
);

const TradesQuery = Type.Object(
  { gpu_type: StringEnum(GPU_TYPES), zone: StringEnum(ZONES), ...PAGE_QUERY },
  { additionalProperties: false },
);

/** D22: gpu_type from `gpu_type` or from `instance_type`; both must agree. */
function gpuTypeOf(q: {
  gpu_type?: GpuType | undefined;
  instance_type?: string | undefined;
}): GpuType {
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

export const marketDataRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.get(
    '/v1/orderbook',
    {
      config: { access: 'customer', scope: 'read', rate: 'query' },
      schema: {
        summary: 'The order book of one GPU type and zone',
        tags: ['market'],
        querystring: OrderBookQuery,
        response: { 200: OrderBookSchema },
      },
    },
    async (request) => {
      const { market, db } = ctx;
      const q = request.query;
      const gpuType = gpuTypeOf(q);
      const now = market.clock.now();
      const snap = market.writer(gpuType, q.zone).view.book.snapshot(q.depth);
      const volume = await volumeSince(db, gpuType, q.zone, now - 24 * HOUR_MS);
      return orderBookView(
        { gpuType, zone: q.zone, instanceType: q.instance_type },
        now,
        snap,
        volume,
      );
    },
  );

  app.get(
    '/v1/prices/estimate',
    {
      config: { access: 'customer', scope: 'read', rate: 'query' },
      schema: {
        summary: 'What a market buy would pay now',
        tags: ['market'],
        querystring: EstimateQuery,
        response: { 200: EstimateSchema },
      },
    },
    (request) => {
      const { market } = ctx;
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
      return estimateView(q, now, est);
    },
  );

  app.get(
    '/v1/trades',
    {
      config: { access: 'customer', scope: 'read', rate: 'query' },
      schema: {
        summary: 'Recent anonymous fills of one book',
        tags: ['market'],
        querystring: TradesQuery,
        response: { 200: TradesSchema },
      },
    },
    async (request) => {
      const q = request.query;
      return tradesView(q, await listTrades(ctx.db, q.gpu_type, q.zone, q.limit, q.offset));
    },
  );

  done();
};
