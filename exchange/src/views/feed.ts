// The events of the live feed of one book (GET /v1/stream, feed/): their
// JSON (each event's `data`) and its schemas, for the OpenAPI document and
// docs/api/market-data.md. Money in dollars rounded to cents (D1), times in
// ISO 8601, and never an account, order or lease id (D33).

import { GPU_TYPES, ZONES, formatDollars } from '@gpux/shared';
import type { GpuType, Zone } from '@gpux/shared';
import { Type } from '@sinclair/typebox';
import type { Static, TSchema } from '@sinclair/typebox';

import { Dollars, StringEnum, Timestamp } from '../http/schema.js';
import type { Level } from '../matching/index.js';
import { iso } from './format.js';
import { LevelSchema } from './market.js';

/** Why the exchange ends a stream (the `closed` event). */
export const CLOSE_REASONS = ['slow_consumer', 'unavailable'] as const;
export type CloseReason = (typeof CLOSE_REASONS)[number];

const Sequence = (description: string): TSchema =>
  Type.Integer({ minimum: 0, description: `The book's sequence number: ${description}` });

export const FeedSnapshotSchema = Type.Object(
  {
    type: Type.Literal('snapshot'),
    gpu_type: StringEnum(GPU_TYPES),
    zone: StringEnum(ZONES),
    sequence: Sequence('the last update this snapshot includes.'),
    time: Timestamp(),
    bids: Type.Array(LevelSchema, { description: 'Every level, highest price first.' }),
    asks: Type.Array(LevelSchema, { description: 'Every level, lowest price first.' }),
  },
  {
    title: 'FeedSnapshot',
    description:
      'The whole visible book: replaces whatever copy the client holds, whatever its sequence.',
  },
);

export const FeedLevelSchema = Type.Object(
  {
    type: Type.Literal('level'),
    sequence: Sequence('one more than the event before.'),
    side: StringEnum(['bid', 'ask'] as const),
    price: Dollars(),
    gpus: Type.Integer({
      minimum: 0,
      description: 'GPUs at this price now; 0: the level is gone.',
    }),
    orders: Type.Integer({ minimum: 0, description: 'Orders at this price now.' }),
    time: Timestamp('When the change was committed.'),
  },
  { title: 'FeedLevel', description: 'One price level as it is now (absolute, not a difference).' },
);

export const FeedTradeSchema = Type.Object(
  {
    type: Type.Literal('trade'),
    sequence: Sequence('one more than the event before.'),
    price: Dollars('Per GPU-hour.'),
    gpus: Type.Integer({ minimum: 1 }),
    time: Timestamp('When it matched.'),
  },
  {
    title: 'FeedTrade',
    description:
      'A fill, as GET /v1/trades lists it. The levels it changed follow as level events.',
  },
);

export const FeedHeartbeatSchema = Type.Object(
  {
    type: Type.Literal('heartbeat'),
    sequence: Sequence('the last update sent; not a new number.'),
    time: Timestamp(),
  },
  { title: 'FeedHeartbeat', description: 'Sent every few seconds: the stream is alive.' },
);

export const FeedClosedSchema = Type.Object(
  {
    type: Type.Literal('closed'),
    reason: StringEnum(CLOSE_REASONS),
    message: Type.String(),
  },
  {
    title: 'FeedClosed',
    description: 'The last event: the exchange ends the stream. Reconnect (Last-Event-ID).',
  },
);

export type FeedSnapshotJson = Static<typeof FeedSnapshotSchema>;
export type FeedLevelJson = Static<typeof FeedLevelSchema>;
export type FeedTradeJson = Static<typeof FeedTradeSchema>;
export type FeedHeartbeatJson = Static<typeof FeedHeartbeatSchema>;
export type FeedClosedJson = Static<typeof FeedClosedSchema>;

/** One server-sent event as the OpenAPI document shows it: its fields and its data. */
export function sse(event: string, data: TSchema, withId: boolean): TSchema {
  return Type.Object(
    {
      ...(withId ? { id: Type.String({ description: 'The sequence number.' }) } : {}),
      event: Type.Literal(event),
      data,
    },
    { additionalProperties: false },
  );
}

/**
 * The stream as one schema: a sequence of server-sent events, each one of
 * these (OpenAPI 3.1 has no schema for the items of a stream; 3.2's
 * `itemSchema` would be the items here).
 */
export const FeedStreamSchema = Type.Array(
  Type.Union([
    sse('snapshot', FeedSnapshotSchema, true),
    sse('level', FeedLevelSchema, true),
    sse('trade', FeedTradeSchema, true),
    sse('heartbeat', FeedHeartbeatSchema, true),
    sse('closed', FeedClosedSchema, false),
  ]),
  {
    description:
      'Server-sent events (text/event-stream): `id:` is the sequence, `event:` the type, `data:` one line of JSON. First a snapshot (or, resuming with Last-Event-ID, the missed updates), then updates, each one more than the last, and a heartbeat every few seconds. docs/api/market-data.md has the recipe.',
  },
);

const level = (l: Level): { price: number; gpus: number; orders: number } => ({
  price: formatDollars(l.price),
  gpus: l.gpus,
  orders: l.orders,
});

export function feedSnapshotView(
  book: { gpuType: GpuType; zone: Zone },
  sequence: number,
  atMs: number,
  bids: readonly Level[],
  asks: readonly Level[],
): FeedSnapshotJson {
  return {
    type: 'snapshot',
    gpu_type: book.gpuType,
    zone: book.zone,
    sequence,
    time: iso(atMs),
    bids: bids.map(level),
    asks: asks.map(level),
  };
}

export function feedLevelView(
  sequence: number,
  bid: boolean,
  l: Level,
  atMs: number,
): FeedLevelJson {
  return {
    type: 'level',
    sequence,
    side: bid ? 'bid' : 'ask',
    price: formatDollars(l.price),
    gpus: l.gpus,
    orders: l.orders,
    time: iso(atMs),
  };
}

export function feedTradeView(
  sequence: number,
  t: { priceCents: number; gpus: number; atMs: number },
): FeedTradeJson {
  return {
    type: 'trade',
    sequence,
    price: formatDollars(t.priceCents),
    gpus: t.gpus,
    time: iso(t.atMs),
  };
}

export function feedHeartbeatView(sequence: number, atMs: number): FeedHeartbeatJson {
  return { type: 'heartbeat', sequence, time: iso(atMs) };
}
