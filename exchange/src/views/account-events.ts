// An account's own events as the API shows them (issue 22,
// docs/api/account-events.md): one JSON object per event, the same in
// GET /v1/account/stream (each event's `data`) and in a webhook's body.
// Money in dollars (D1), times in ISO 8601.

import { CANCEL_REASONS, GPU_TYPES, LEASE_STATUSES, ZONES } from '@gpux/shared';
import { Type } from '@sinclair/typebox';
import type { TSchema } from '@sinclair/typebox';

import { ACCOUNT_EVENT_KINDS } from '../account-events/events.js';
import type { AccountEventKind } from '../account-events/events.js';
import { Dollars, GpuCount, StringEnum, Timestamp } from '../http/schema.js';
import { ENTRY_KINDS, TRANSACTION_KINDS } from '../ledger/ledger.js';
import { sse } from './feed.js';
import { iso } from './format.js';

/** An event as stored (account_events). */
export interface AccountEventRow {
  readonly seq: number;
  readonly event_id: string;
  readonly kind: AccountEventKind;
  /** The payload's JSON text, as stored. */
  readonly payload: string;
  readonly created_ms: number;
}

const ORDER_FIELDS = {
  order_id: Type.String(),
  side: StringEnum(['buy', 'sell']),
  gpu_type: StringEnum(GPU_TYPES),
  zone: StringEnum(ZONES),
  gpu_count: GpuCount('The GPUs the order asked for.'),
  filled_gpus: Type.Integer({
    minimum: 0,
    description: 'The GPUs filled so far (this fill included).',
  }),
};

const OrderFillData = Type.Object(
  {
    ...ORDER_FIELDS,
    fill: Type.Object({
      id: Type.String({ description: 'trd_…: the trade.' }),
      gpus: GpuCount(),
      price: Dollars('Dollars per GPU-hour.'),
      hours: Type.Number(),
      lease_id: Type.String({ description: 'The lease the fill made (the buyer’s).' }),
      matched_at: Timestamp(),
    }),
  },
  { title: 'OrderFillEventData' },
);

const OrderCancelData = Type.Object(
  {
    ...ORDER_FIELDS,
    cancelled_gpus: Type.Integer({ minimum: 0 }),
    reason: StringEnum(CANCEL_REASONS),
    cancelled_at: Timestamp(),
  },
  { title: 'OrderCancelEventData' },
);

const LeaseData = Type.Object(
  {
    lease_id: Type.String(),
    order_id: Type.String({ description: 'The buy order that made the lease.' }),
    gpu_type: StringEnum(GPU_TYPES),
    zone: StringEnum(ZONES),
    gpu_count: GpuCount(),
    status: StringEnum(LEASE_STATUSES, { description: 'The lease’s status after the change.' }),
    start_time: Timestamp(),
    end_time: Timestamp(),
    ended_at: Type.Optional(Timestamp()),
    end_reason: Type.Optional(StringEnum(['terminated', 'resold', 'expired', 'failed'])),
    refund: Type.Optional(Dollars('What was refunded to the holder.')),
    transfer_time: Type.Optional(
      Timestamp('lease.sold: when the holder’s access ends and the buyer’s lease starts.'),
    ),
  },
  { title: 'LeaseEventData' },
);

const TransactionData = Type.Object(
  {
    transaction_id: Type.String(),
    kind: StringEnum(TRANSACTION_KINDS, {
      description: 'The ledger transaction’s kind (docs/api/accounts.md).',
    }),
    amount: Dollars('What the transaction moved for this account: positive, it was credited.'),
    entries: Type.Array(StringEnum(ENTRY_KINDS), {
      description: 'The kinds of this account’s entries.',
    }),
    order_id: Type.Union([Type.String(), Type.Null()]),
    lease_id: Type.Union([Type.String(), Type.Null()]),
  },
  { title: 'TransactionEventData' },
);

const DATA: Record<AccountEventKind, TSchema> = {
  'order.filled': OrderFillData,
  'order.partially_filled': OrderFillData,
  'order.cancelled': OrderCancelData,
  'lease.provisioning': LeaseData,
  'lease.active': LeaseData,
  'lease.failed': LeaseData,
  'lease.terminated': LeaseData,
  'lease.expired': LeaseData,
  'lease.sold': LeaseData,
  'lease.kubeconfig_refreshed': LeaseData,
  'transaction.posted': TransactionData,
};

const eventSchema = (kind: AccountEventKind): TSchema =>
  Type.Object(
    {
      id: Type.String({ description: 'evt_…: the event’s stable id (deduplicate by it).' }),
      seq: Type.Integer({ minimum: 1, description: 'The account’s event number.' }),
      type: Type.Literal(kind),
      created_at: Timestamp(),
      data: DATA[kind],
    },
    { additionalProperties: false },
  );

/** One event of any kind: the stream's `data` and a webhook's body. */
export const AccountEventSchema = Type.Union(
  ACCOUNT_EVENT_KINDS.map((k) => eventSchema(k)),
  { title: 'AccountEvent' },
);

const ReadySchema = Type.Object(
  {
    seq: Type.Integer({
      minimum: 0,
      description:
        'The account’s event number the stream goes on from (Last-Event-ID, or the last).',
    }),
  },
  { additionalProperties: false },
);

const HeartbeatSchema = Type.Object(
  { seq: Type.Integer({ minimum: 0, description: 'The last event number sent.' }) },
  { additionalProperties: false },
);

const GapSchema = Type.Object(
  {
    from: Type.Integer({ description: 'The first event number no longer kept.' }),
    to: Type.Integer({ description: 'The last one.' }),
  },
  { additionalProperties: false },
);

const ClosedSchema = Type.Object(
  { reason: StringEnum(['unavailable']) },
  { additionalProperties: false },
);

export const AccountStreamSchema = Type.Array(
  Type.Union([
    sse('ready', ReadySchema, true),
    ...ACCOUNT_EVENT_KINDS.map((k) => sse(k, eventSchema(k), true)),
    sse('gap', GapSchema, false),
    sse('heartbeat', HeartbeatSchema, false),
    sse('closed', ClosedSchema, false),
  ]),
  {
    description:
      'Server-sent events (text/event-stream): first `ready` (its `id:` the number the stream goes on from), then each of the account’s events as it commits, `id:` its number, `event:` its type, `data:` the event; `heartbeat` every few seconds. docs/api/account-events.md has the kinds and their data.',
  },
);

/** The event object of a stored row (its payload is already JSON text). */
export function accountEventJson(r: AccountEventRow): string {
  return `{"id":${JSON.stringify(r.event_id)},"seq":${r.seq},"type":${JSON.stringify(r.kind)},"created_at":"${iso(r.created_ms)}","data":${r.payload}}`;
}
