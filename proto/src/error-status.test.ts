import { status } from '@grpc/grpc-js';
import { ERROR_CODES } from '@gpux/shared';
import type { ErrorCode } from '@gpux/shared';
import { describe, expect, it } from 'vitest';

import { GRPC_STATUS_OF_ERROR, grpcStatusOf } from './error-status.js';

describe('errors by kind → gRPC status (issue 20)', () => {
  it('every code of the error catalogue has its status', () => {
    expect(Object.keys(GRPC_STATUS_OF_ERROR).sort()).toEqual(Object.keys(ERROR_CODES).sort());
  });

  it.each<[ErrorCode, status]>([
    // validation
    ['invalid_request', status.INVALID_ARGUMENT],
    ['price_out_of_collar', status.INVALID_ARGUMENT],
    ['order_value_too_low', status.INVALID_ARGUMENT],
    // who is asking
    ['unauthorized', status.UNAUTHENTICATED],
    ['forbidden', status.PERMISSION_DENIED],
    ['not_found', status.NOT_FOUND],
    // conflicts and state
    ['insufficient_funds', status.FAILED_PRECONDITION],
    ['order_already_filled', status.FAILED_PRECONDITION],
    ['lease_not_active', status.FAILED_PRECONDITION],
    ['lease_not_ready', status.FAILED_PRECONDITION],
    ['lease_not_provisioning', status.FAILED_PRECONDITION],
    ['insufficient_liquidity', status.FAILED_PRECONDITION],
    ['insufficient_capacity', status.FAILED_PRECONDITION],
    ['cluster_cordoned', status.FAILED_PRECONDITION],
    ['self_trade_prevented', status.FAILED_PRECONDITION],
    ['idempotency_key_reused', status.FAILED_PRECONDITION],
    ['idempotency_key_in_progress', status.ABORTED],
    // limits
    ['rate_limited', status.RESOURCE_EXHAUSTED],
    ['payload_too_large', status.RESOURCE_EXHAUSTED],
    // the exchange itself
    ['unavailable', status.UNAVAILABLE],
    ['internal_error', status.INTERNAL],
  ])('%s → %s', (code, expected) => {
    expect(grpcStatusOf(code)).toBe(expected);
  });

  it('anything that is not a code of the catalogue is INTERNAL', () => {
    expect(grpcStatusOf('toString')).toBe(status.INTERNAL);
    expect(grpcStatusOf('no_such_code')).toBe(status.INTERNAL);
  });
});
