// One way a command of the market says no: a returned Refusal, never a throw.
// A throw from a command is a bug (InvariantError or worse) and costs the
// book a rebuild (book-writer.ts); a refusal changes nothing and costs nothing.

import { GpuxError, ValidationError } from '@gpux/shared';
import type { ErrorCode, FieldProblem } from '@gpux/shared';

import type { RejectCode } from '../matching/index.js';

export type RefusalCode =
  | RejectCode
  | 'account_suspended'
  | 'insufficient_capacity'
  | 'cluster_cordoned'
  | 'insufficient_funds'
  | 'lease_not_active'
  | 'lease_not_ready'
  | 'lease_not_provisioning'
  | 'market_halted'
  | 'order_already_filled'
  | 'not_found';

export interface Refusal {
  readonly ok: false;
  readonly code: RefusalCode & ErrorCode;
  readonly message: string;
  /** insufficient_liquidity: the GPUs that could not be filled (D10). */
  readonly missingGpus?: number | undefined;
  /** invalid_request about one field of the request (docs/api/errors.md). */
  readonly problem?: FieldProblem;
}

export function refuse(code: RefusalCode, message: string, missingGpus?: number): Refusal {
  return missingGpus === undefined
    ? { ok: false, code, message }
    : { ok: false, code, message, missingGpus };
}

/** invalid_request naming the field of the request at fault and the rule it breaks. */
export function refuseField(problem: FieldProblem & { readonly field: string }): Refusal {
  return { ok: false, code: 'invalid_request', message: problem.message, problem };
}

/** The API error of a refusal (D19, D20). */
export function refusalError(r: Refusal): GpuxError {
  if (r.problem !== undefined) return new ValidationError([r.problem]);
  // The collar (D15) is about the limit price the request named.
  if (r.code === 'price_out_of_collar') {
    return new GpuxError(r.code, r.message, { details: { field: 'limit_price' } });
  }
  return new GpuxError(
    r.code,
    r.message,
    r.missingGpus === undefined ? {} : { details: { missing_gpus: r.missingGpus } },
  );
}

/** A lease that is no longer live (ended, or not this account's). */
export function notActive(leaseId: string): Refusal {
  return refuse('lease_not_active', `lease ${leaseId} is no longer active`);
}
