// One way a command of the market says no: a returned Refusal, never a throw.
// A throw from a command is a bug (InvariantError or worse) and costs the
// book a rebuild (book-writer.ts); a refusal changes nothing and costs nothing.

import { GpuxError } from '@gpux/shared';
import type { ErrorCode } from '@gpux/shared';

import type { RejectCode } from '../matching/index.js';

export type RefusalCode =
  | RejectCode
  | 'insufficient_capacity'
  | 'insufficient_funds'
  | 'lease_not_active'
  | 'lease_not_ready'
  | 'order_already_filled'
  | 'not_found';

export interface Refusal {
  readonly ok: false;
  readonly code: RefusalCode & ErrorCode;
  readonly message: string;
  /** insufficient_liquidity: the GPUs that could not be filled (D10). */
  readonly missingGpus?: number | undefined;
}

export function refuse(code: RefusalCode, message: string, missingGpus?: number): Refusal {
  return missingGpus === undefined
    ? { ok: false, code, message }
    : { ok: false, code, message, missingGpus };
}

/** The API error of a refusal (D19, D20). */
export function refusalError(r: Refusal): GpuxError {
  return new GpuxError(
    r.code,
    r.message,
    r.missingGpus === undefined ? {} : { details: { missing_gpus: r.missingGpus } },
  );
}
