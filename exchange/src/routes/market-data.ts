// GET /v1/orderbook (spec, D22), GET /v1/prices/estimate (spec, D17, D22),
// GET /v1/trades (D33) and GET /v1/candles: views of one book, for every
// account (rule 5).

import {
  FieldProblems,
  GPU_TYPES,
  GPUS_PER_NODE,
  HOUR_MS,
  MAX_DURATION_HOURS,
  ZONES,
  parseTime,
} from '@gpux/shared';
import type { GpuType } from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';

import { callerOf } from '../auth/authenticate.js';
import { Defaulted, GpuCount, PAGE_QUERY, StringEnum, Timestamp } from '../http/schema.js';
import { MAX_CANDLES, candleRange, candlesOf } from '../market/candles.js';
import { listTrades, volumeSince } from '../market/queries.js';
import type { RouteContext } from '../services.js';
import {
  CandlesSchema,
  EstimateSchema,
  GranularitySchema,
  OrderBookSchema,
  TradesSchema,
  candlesView,
  estimateView,
  orderBookView,
  tradesView,
} from '../views/market.js';

/** D22: `<gpu_count>x<gpu_type>`, e.g. 8xh100. */
const INSTANCE_TYPE = `^([1-9][0-9]{0,5})x(${GPU_TYPES.join('|')})$`;
const INSTANCE_TYPE_RE = new RegExp(INSTANCE_TYPE);

const OrderBookQuery = Type.Object(
  {
    gpu_type: StringEnum(GPU_TYPES),
    instance_type: Type.Optional(
      Type.String({
        pattern: INSTANCE_TYPE,
        examples: ['8xh100'],
        description:
          'Compatibility: `<gpu_count>x<gpu_type>`, accepted in place of gpu_type (which is then taken from it) and echoed in the answer.',
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
    gpu_count: GpuCount(),
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

const CandlesQuery = Type.Object(
  {
    gpu_type: StringEnum(GPU_TYPES),
    zone: StringEnum(ZONES),
    granularity: GranularitySchema('Seconds per candle.'),
    start: Type.Optional(
      Timestamp(
        `The first interval is the one holding this time (default: ${MAX_CANDLES} intervals before end's).`,
      ),
    ),
    end: Type.Optional(
      Timestamp(
        `Not included: the last interval is the one holding the instant before it (default: the end of the interval in progress, so that interval is included). At most ${MAX_CANDLES} intervals from start's to end's.`,
      ),
    ),
  },
  { additionalProperties: false },
);

/**
 * D22: `instance_type` may stand in place of `gpu_type`. The schema requires
 * gpu_type (what a client generated from the document sends); a request
 * naming only an instance type of the right form gets gpu_type from it
 * before it is validated. A malformed one is left to the schema to report.
 */
function gpuTypeFromInstanceType(request: FastifyRequest, _reply: unknown, done: () => void): void {
  const q = request.query as Record<string, unknown>;
  const it = q['instance_type'];
  if (q['gpu_type'] === undefined && typeof it === 'string') {
    const t = INSTANCE_TYPE_RE.exec(it)?.[2];
    if (t !== undefined) q['gpu_type'] = t;
  }
  done();
}

/** D22: an instance type's count is whole nodes and its GPU type is gpu_type's. */
function checkInstanceType(q: { gpu_type: GpuType; instance_type?: string | undefined }): void {
  if (q.instance_type === undefined) return;
  const [, count, type] = INSTANCE_TYPE_RE.exec(q.instance_type) ?? [];
  const problems = new FieldProblems();
  if (Number(count) % GPUS_PER_NODE !== 0) {
    problems.add({
      field: 'instance_type',
      rule: 'multiple_of',
      message: `instance_type must count whole nodes of ${GPUS_PER_NODE} GPUs, like 8xh100 or 16xh100`,
      limit: GPUS_PER_NODE,
    });
  }
  if (type !== q.gpu_type) {
    problems.add({
      field: 'instance_type',
      rule: 'conflict',
      message: `instance_type names ${type ?? 'another GPU type'} but gpu_type is ${q.gpu_type}`,
    });
  }
  problems.throwIfAny();
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
      preValidation: gpuTypeFromInstanceType,
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
      checkInstanceType(q);
      const gpuType = q.gpu_type;
      const now = market.clock.now();
      const { view, feed } = market.writer(gpuType, q.zone);
      // Read together, before anything is awaited (issue 22: the feed's recipe).
      const snap = view.book.snapshot(q.depth);
      const sequence = feed.sequence;
      const volume = await volumeSince(db, gpuType, q.zone, now - 24 * HOUR_MS);
      return orderBookView(
        { gpuType, zone: q.zone, instanceType: q.instance_type, halted: view.haltedAt !== null },
        now,
        snap,
        volume,
        sequence,
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

  app.get(
    '/v1/candles',
    {
      config: { access: 'customer', scope: 'read', rate: 'query' },
      schema: {
        summary: 'Open, high, low, close and volume of one book per interval',
        description:
          'Intervals are aligned on the Unix epoch and each candle is named by its start; oldest first, intervals without trades left out. ' +
          `A request covers at most ${MAX_CANDLES} intervals: a longer range is invalid_request, with the limit in the message.`,
        tags: ['market'],
        querystring: CandlesQuery,
        response: { 200: CandlesSchema },
      },
    },
    async (request) => {
      const q = request.query;
      const range = candleRange(
        {
          granularity: q.granularity,
          start: q.start === undefined ? undefined : parseTime(q.start, 'start'),
          end: q.end === undefined ? undefined : parseTime(q.end, 'end'),
        },
        ctx.market.clock.now(),
      );
      return candlesView(q, range, await candlesOf(ctx.db, q.gpu_type, q.zone, range));
    },
  );

  done();
};
