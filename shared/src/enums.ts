// Closed vocabularies of the API (service spec "Resources") and the numeric
// limits the decisions fix. Arrays are the source of truth; the union types and
// guards are derived so a new value is added in exactly one place.

export const GPU_TYPES = ['h100', 'h200', 'b200', 'b300'] as const;
export type GpuType = (typeof GPU_TYPES)[number];

export const ZONES = ['us-west-1', 'us-east-1', 'eu-west-1'] as const;
export type Zone = (typeof ZONES)[number];

export const SIDES = ['buy', 'sell'] as const;
export type Side = (typeof SIDES)[number];

export const ORDER_TYPES = ['market', 'limit'] as const;
export type OrderType = (typeof ORDER_TYPES)[number];

export const ORDER_STATUSES = ['pending', 'partial', 'filled', 'cancelled'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

/** D25 */
export const LEASE_STATUSES = [
  'provisioning',
  'active',
  'terminated',
  'expired',
  'failed',
] as const;
export type LeaseStatus = (typeof LEASE_STATUSES)[number];

/**
 * D12, plus what turns away an order that executes after acceptance (a
 * scheduled or flexible buy): D10, D17, D16 (docs/matching.md).
 */
export const CANCEL_REASONS = [
  'user',
  'expired',
  'lease_terminated',
  'nodes_offline',
  'insufficient_liquidity',
  'self_trade_prevented',
  'order_value_too_low',
  /** An operator suspended the account (POST /v1/admin/accounts/{id}/suspend). */
  'account_suspended',
  /** An operator cordoned the sell's cluster (POST /v1/admin/clusters/{id}/cordon). */
  'cluster_cordoned',
] as const;
export type CancelReason = (typeof CANCEL_REASONS)[number];

/** D24: what a token may do. The agent's gRPC calls need `provider`. */
export const TOKEN_SCOPES = ['trade', 'read', 'leases', 'provider', 'admin'] as const;
export type TokenScope = (typeof TOKEN_SCOPES)[number];

function guard<T extends string>(values: readonly T[]): (x: unknown) => x is T {
  const set: ReadonlySet<unknown> = new Set(values);
  return (x: unknown): x is T => set.has(x);
}

export const isGpuType = guard(GPU_TYPES);
export const isZone = guard(ZONES);
export const isSide = guard(SIDES);
export const isOrderType = guard(ORDER_TYPES);
export const isOrderStatus = guard(ORDER_STATUSES);
export const isLeaseStatus = guard(LEASE_STATUSES);
export const isCancelReason = guard(CANCEL_REASONS);
export const isTokenScope = guard(TOKEN_SCOPES);

/** Orders are whole nodes (spec rule 4, D5). */
export const GPUS_PER_NODE = 8;
export const MIN_DURATION_HOURS = 1;
export const MAX_DURATION_HOURS = 720;
/** D2 */
export const PLATFORM_FEE_PERCENT = 10;
/** D16: $10. */
export const MIN_ORDER_VALUE_CENTS = 1000;
/** D15 */
export const COLLAR_PERCENT = 50;
export const HOUR_MS = 3_600_000;
