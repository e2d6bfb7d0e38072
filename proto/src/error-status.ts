// The exchange's errors by kind → the gRPC status an agent is answered
// with (issue 20): one table, for both sides of the contract. The exchange's
// gRPC service (exchange/src/providers/grpc-server.ts) answers a typed
// error (GpuxError, a code of the error catalogue in shared/src/errors.ts)
// with its status here; the agent reads the status to tell what waiting
// cures from what it does not. A code added to the catalogue does not
// compile until it has its row.
//
//   validation (the request breaks a rule)    INVALID_ARGUMENT
//   unauthenticated / forbidden               UNAUTHENTICATED / PERMISSION_DENIED
//   not found                                 NOT_FOUND
//   conflict, state (a lease not active, …)   FAILED_PRECONDITION
//   a request of the same key still running   ABORTED (try again shortly)
//   rate limited, too large                   RESOURCE_EXHAUSTED (with retry-after-ms
//                                             when the wait is known; without: too large)
//   unavailable (draining, a standby)         UNAVAILABLE
//   anything else                             INTERNAL

import { status } from '@grpc/grpc-js';
import type { ErrorCode } from '@gpux/shared';

export const GRPC_STATUS_OF_ERROR = {
  invalid_request: status.INVALID_ARGUMENT,
  price_out_of_collar: status.INVALID_ARGUMENT,
  order_value_too_low: status.INVALID_ARGUMENT,
  unauthorized: status.UNAUTHENTICATED,
  insufficient_funds: status.FAILED_PRECONDITION,
  forbidden: status.PERMISSION_DENIED,
  account_suspended: status.PERMISSION_DENIED,
  csrf_token_invalid: status.PERMISSION_DENIED,
  not_found: status.NOT_FOUND,
  order_already_filled: status.FAILED_PRECONDITION,
  lease_not_active: status.FAILED_PRECONDITION,
  lease_not_ready: status.FAILED_PRECONDITION,
  lease_not_provisioning: status.FAILED_PRECONDITION,
  ssh_key_exists: status.ALREADY_EXISTS,
  insufficient_liquidity: status.FAILED_PRECONDITION,
  insufficient_capacity: status.FAILED_PRECONDITION,
  cluster_cordoned: status.FAILED_PRECONDITION,
  self_trade_prevented: status.FAILED_PRECONDITION,
  market_halted: status.FAILED_PRECONDITION,
  // gRPC's code for "retry the same request a little later": nothing happened.
  idempotency_key_in_progress: status.ABORTED,
  payload_too_large: status.RESOURCE_EXHAUSTED,
  idempotency_key_reused: status.FAILED_PRECONDITION,
  rate_limited: status.RESOURCE_EXHAUSTED,
  internal_error: status.INTERNAL,
  unavailable: status.UNAVAILABLE,
} as const satisfies Record<ErrorCode, status>;

/** The gRPC status of a catalogue code; INTERNAL for anything that is not one. */
export function grpcStatusOf(code: string): status {
  return Object.hasOwn(GRPC_STATUS_OF_ERROR, code)
    ? GRPC_STATUS_OF_ERROR[code as ErrorCode]
    : status.INTERNAL;
}

/**
 * The trailing metadata key of a RESOURCE_EXHAUSTED's wait: the decimal
 * milliseconds before the same kind of call is taken again (docs/providers.md).
 */
export const RETRY_AFTER_MS = 'retry-after-ms';
