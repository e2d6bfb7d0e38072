// Rows of migrations/0005 as plain objects whose keys are the column names,
// so a batch is written with one json_populate_recordset per table.

import { GPUS_PER_NODE, InvariantError } from '@gpux/shared';
import type {
  CancelReason,
  GpuType,
  LeaseProvisionEvent,
  LeaseRevokeEvent,
  LeaseStatus,
  OrderStatus,
  OrderType,
  Side,
  Zone,
} from '@gpux/shared';

import type { OpenOrder, OrderInput } from '../matching/index.js';

export interface OrderRow {
  id: string;
  account_id: string;
  organization_id: string;
  side: Side;
  order_type: OrderType;
  gpu_type: GpuType;
  zone: Zone;
  gpu_count: number;
  duration_hours: number;
  limit_price_cents: number | null;
  allow_partial: boolean;
  start_ms: number;
  flexible_window_hours: number | null;
  expires_input_ms: number | null;
  cluster_id: string | null;
  resale_lease_id: string | null;
  transfer_immediately: boolean | null;
  status: OrderStatus;
  filled_gpus: number;
  cancelled_gpus: number;
  cancel_reason: CancelReason | null;
  reference_price_cents: number | null;
  created_ms: number;
  filled_ms: number | null;
  cancelled_ms: number | null;
  book_state: 'resting' | 'scheduled' | 'unseen' | null;
  remaining_nodes: number | null;
  seq: number | null;
  accept_seq: number | null;
  accepted_ms: number | null;
  arrive_ms: number | null;
  expires_ms: number | null;
  rest_price_cents: number | null;
  /** D27: the first usable instant of a sell's window (engine windowStartAt). */
  window_start_ms: number | null;
  /** D27: the exact end of a sell's window (engine windowEndAt). */
  window_end_ms: number | null;
}

export const ORDER_COLUMNS = [
  'id',
  'account_id',
  'organization_id',
  'side',
  'order_type',
  'gpu_type',
  'zone',
  'gpu_count',
  'duration_hours',
  'limit_price_cents',
  'allow_partial',
  'start_ms',
  'flexible_window_hours',
  'expires_input_ms',
  'cluster_id',
  'resale_lease_id',
  'transfer_immediately',
  'status',
  'filled_gpus',
  'cancelled_gpus',
  'cancel_reason',
  'reference_price_cents',
  'created_ms',
  'filled_ms',
  'cancelled_ms',
  'book_state',
  'remaining_nodes',
  'seq',
  'accept_seq',
  'accepted_ms',
  'arrive_ms',
  'expires_ms',
  'rest_price_cents',
  'window_start_ms',
  'window_end_ms',
] as const satisfies readonly (keyof OrderRow)[];

/** Columns that change after an order is created. */
export const ORDER_MUTABLE_COLUMNS = [
  'status',
  'filled_gpus',
  'cancelled_gpus',
  'cancel_reason',
  'reference_price_cents',
  'filled_ms',
  'cancelled_ms',
  'book_state',
  'remaining_nodes',
  'seq',
  'accept_seq',
  'accepted_ms',
  'arrive_ms',
  'expires_ms',
  'rest_price_cents',
] as const satisfies readonly (keyof OrderRow)[];

export interface LeaseRow {
  id: string;
  account_id: string;
  organization_id: string;
  buy_order_id: string;
  seller_account_id: string;
  cluster_id: string;
  gpu_type: GpuType;
  zone: Zone;
  gpu_count: number;
  hourly_cents: number;
  compute_cents: number;
  fee_cents: number;
  start_ms: number;
  end_ms: number;
  created_ms: number;
  status: LeaseStatus;
  ended_ms: number | null;
  end_reason: 'terminated' | 'resold' | 'expired' | 'failed' | null;
  refund_cents: number | null;
  source_lease_id: string | null;
  ready_ms: number | null;
  /** D27: sold ahead: its holder's access ends then (the buyer's lease starts). */
  transfer_ms: number | null;
  /** When its provision event was written: its start (null until then). */
  opened_ms: number | null;
}

export const LEASE_MUTABLE_COLUMNS = [
  'status',
  'ended_ms',
  'end_reason',
  'refund_cents',
  'ready_ms',
  'transfer_ms',
  'opened_ms',
] as const satisfies readonly (keyof LeaseRow)[];

export interface LeaseNodeRow {
  lease_id: string;
  node_id: string;
  hostname: string;
}

export interface FillRow {
  id: string;
  gpu_type: GpuType;
  zone: Zone;
  buy_order_id: string;
  sell_order_id: string;
  lease_id: string;
  gpus: number;
  price_cents: number;
  hours: number;
  at_ms: number;
  book_seq: number;
}

/** A provision event as the outbox keeps it: the relay adds the lease's key snapshot. */
export type StoredProvisionEvent = Omit<LeaseProvisionEvent, 'ssh_public_keys'>;

export interface OutboxRow {
  event_id: string;
  subject: string;
  payload: StoredProvisionEvent | LeaseRevokeEvent;
  created_ms: number;
}

/** What a new order is made of; the book's columns start empty. */
export type NewOrderFields = Omit<
  OrderRow,
  | 'status'
  | 'filled_gpus'
  | 'cancelled_gpus'
  | 'cancel_reason'
  | 'reference_price_cents'
  | 'filled_ms'
  | 'cancelled_ms'
  | 'book_state'
  | 'remaining_nodes'
  | 'seq'
  | 'accept_seq'
  | 'accepted_ms'
  | 'arrive_ms'
  | 'expires_ms'
  | 'rest_price_cents'
  | 'window_start_ms'
  | 'window_end_ms'
> &
  Partial<Pick<OrderRow, 'window_start_ms' | 'window_end_ms'>>;

/** A new order's row: pending, nothing filled, not yet in a book. */
export function newOrderRow(f: NewOrderFields): OrderRow {
  // Every field written out, in ORDER_COLUMNS order, rather than `...f`: a
  // spread copies the request's object shape, and the rows of one hot path
  // must share one hidden class (bench http: the spread cost ~8% of the CPU).
  return {
    id: f.id,
    account_id: f.account_id,
    organization_id: f.organization_id,
    side: f.side,
    order_type: f.order_type,
    gpu_type: f.gpu_type,
    zone: f.zone,
    gpu_count: f.gpu_count,
    duration_hours: f.duration_hours,
    limit_price_cents: f.limit_price_cents,
    allow_partial: f.allow_partial,
    start_ms: f.start_ms,
    flexible_window_hours: f.flexible_window_hours,
    expires_input_ms: f.expires_input_ms,
    cluster_id: f.cluster_id,
    resale_lease_id: f.resale_lease_id,
    transfer_immediately: f.transfer_immediately,
    status: 'pending',
    filled_gpus: 0,
    cancelled_gpus: 0,
    cancel_reason: null,
    reference_price_cents: null,
    created_ms: f.created_ms,
    filled_ms: null,
    cancelled_ms: null,
    book_state: null,
    remaining_nodes: null,
    seq: null,
    accept_seq: null,
    accepted_ms: null,
    arrive_ms: null,
    expires_ms: null,
    rest_price_cents: null,
    window_start_ms: f.window_start_ms ?? null,
    window_end_ms: f.window_end_ms ?? null,
  };
}

/** The engine's input for an order row: what `place` got, so `restore` rebuilds the same book. */
export function inputOf(r: OrderRow): OrderInput {
  return {
    id: r.id,
    side: r.side,
    type: r.order_type,
    accountId: r.account_id,
    orgId: r.organization_id,
    nodes: r.gpu_count / GPUS_PER_NODE,
    durationHours: r.duration_hours,
    limitPrice: r.limit_price_cents ?? undefined,
    allowPartial: r.allow_partial,
    // D27: a resale is a sell of the whole lease, traded whole or not at all.
    ...(r.resale_lease_id !== null ? { allOrNothing: true } : {}),
    startAt: r.start_ms,
    flexibleWindowHours: r.flexible_window_hours ?? undefined,
    expiresAt: r.expires_input_ms ?? undefined,
    windowStartAt: r.window_start_ms ?? undefined,
    windowEndAt: r.window_end_ms ?? undefined,
    // The engine groups a step's fills into leases by this key (D11): a
    // cluster for a provider's sell, the lease sold for a resale (D27).
    clusterId: r.resale_lease_id ?? r.cluster_id ?? undefined,
  };
}

/** The engine's view of an open order, from its row. */
export function openOrderOf(r: OrderRow): OpenOrder {
  if (
    r.book_state === null ||
    r.remaining_nodes === null ||
    r.accept_seq === null ||
    r.accepted_ms === null ||
    r.arrive_ms === null
  ) {
    throw new InvariantError(`order ${r.id} is not open`);
  }
  return {
    input: inputOf(r),
    state: r.book_state,
    remaining: r.remaining_nodes,
    acceptedAt: r.accepted_ms,
    acceptSeq: r.accept_seq,
    seq: r.seq,
    startAt: r.arrive_ms,
    expiresAt: r.expires_ms ?? Infinity,
    price: r.rest_price_cents,
  };
}

/** Copy the engine's view of an order into its row (or clear it once closed). */
export function syncBookColumns(r: OrderRow, oo: OpenOrder | undefined): void {
  if (oo === undefined) {
    r.book_state = null;
    r.remaining_nodes = null;
    r.seq = null;
    r.accept_seq = null;
    r.accepted_ms = null;
    r.arrive_ms = null;
    r.expires_ms = null;
    r.rest_price_cents = null;
    return;
  }
  r.book_state = oo.state;
  r.remaining_nodes = oo.remaining;
  r.seq = oo.seq;
  r.accept_seq = oo.acceptSeq;
  r.accepted_ms = oo.acceptedAt;
  r.arrive_ms = oo.startAt;
  r.expires_ms = oo.expiresAt === Infinity ? null : oo.expiresAt;
  r.rest_price_cents = oo.price;
}

/** The API status of an order row (spec: pending, partial, filled, cancelled). */
export function statusOf(r: OrderRow): OrderStatus {
  if (r.cancelled_gpus > 0) return 'cancelled';
  if (r.filled_gpus === r.gpu_count) return 'filled';
  return r.filled_gpus > 0 ? 'partial' : 'pending';
}
