// One way a command of the market says no: a returned Refusal, never a throw.
// A throw from a command is a bug (InvariantError or worse) and costs the
// book a rebuild (book-writer.ts); a refusal changes nothing and costs nothing.

import { GpuxError, ValidationError } from '@gpux/shared';
import type { ErrorCode, FieldProblem } from '@gpux/shared';

import type { CollarBand, RejectCode } from '../matching/index.js';

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
  /** price_out_of_collar: the band the price missed (D15). */
  readonly collar?: CollarBand | undefined;
}

export function refuse(code: RefusalCode, message: string, missingGpus?: number): Refusal {
  return missingGpus === undefined
    ? { ok: false, code, message }
    : { ok: false, code, message, missingGpus };
}

/** The engine's refusal of an order, with what it says about the collar or the liquidity. */
export function refuseOrder(r: {
  readonly code: RefusalCode;
  readonly message: string;
  readonly missingGpus?: number | undefined;
  readonly collar?: CollarBand | undefined;
}): Refusal {
  const base = refuse(r.code, r.message, r.missingGpus);
  return r.collar === undefined ? base : { ...base, collar: r.collar };
}

/** Cents as dollars with the cents shown ($2.00; a half cent as $2.005). */
function usd(twiceCents: number): string {
  return `$${(twiceCents / 200).toFixed(twiceCents % 2 === 0 ? 2 : 3)}`;
}

/** D15: the collar's details: the reference, the band, in dollars per GPU-hour. */
function collarError(r: Refusal, band: CollarBand): GpuxError {
  const ref = band.reference === 'last_trade' ? 'the last trade' : 'the mid price';
  return new GpuxError(
    r.code,
    `limit_price must lie between ${usd(band.lo * 2)} and ${usd(band.hi * 2)} per GPU-hour: within 50% of the reference price ${usd(band.referenceTwiceCents)}, ${ref}`,
    {
      details: {
        field: 'limit_price',
        reference_price: band.referenceTwiceCents / 200,
        reference: band.reference,
        min_price: band.lo / 100,
        max_price: band.hi / 100,
      },
    },
  );
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
    if (r.collar !== undefined) return collarError(r, r.collar);
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
