// The money of a lease after its fill: the refund of D26 and the recovery of
// a resale (D27). Exact integer arithmetic, rounded half-even once (D1).

import { HOUR_MS, mulDivHalfEven, splitFee } from '@gpux/shared';
import type { Cents } from '@gpux/shared';

/** What these rules need of a lease. */
export interface LeaseTerms {
  /** Σ price × gpus of its fills: cents per hour for the whole lease. */
  readonly hourly_cents: number;
  readonly gpu_count: number;
  readonly start_ms: number;
  readonly end_ms: number;
}

/** D4: the rate shown for a lease, cents per GPU-hour, half-even. */
export function rateCentsOf(l: LeaseTerms): Cents {
  return mulDivHalfEven([l.hourly_cents], l.gpu_count);
}

export interface Refund {
  readonly usedMs: number;
  readonly remainingMs: number;
  /** D26: hours_remaining × rate × gpu_count, exact, rounded once. */
  readonly refundCents: Cents;
}

/** D26: hours used and left at `at`, and the refund for the rest of the lease. */
export function refundAt(l: LeaseTerms, at: number): Refund {
  const from = Math.max(at, l.start_ms);
  const remainingMs = Math.max(0, l.end_ms - from);
  return {
    usedMs: from - l.start_ms,
    remainingMs,
    refundCents: mulDivHalfEven([l.hourly_cents, remainingMs], HOUR_MS),
  };
}

/**
 * D27: a resold lease's holder gets back the original rate for the time
 * nobody uses: what is left of the lease at the transfer after the buyer's
 * `soldMs`. Paying for hours that were sold would create money (D3).
 */
export function originalRefundCents(l: LeaseTerms, transferAt: number, soldMs: number): Cents {
  const unusedMs = Math.max(0, l.end_ms - transferAt - soldMs);
  return mulDivHalfEven([l.hourly_cents, unusedMs], HOUR_MS);
}

export interface Recovery {
  /** Before the fee: what the buyer pays for the time bought. */
  readonly grossCents: Cents;
  readonly feeCents: Cents;
  /** D27 net_recovery: 90 % of the gross. */
  readonly netCents: Cents;
}

/** D27 pending form: what `remainingMs` of the lease would fetch at `priceCents` per GPU-hour. */
export function potentialRecovery(
  remainingMs: number,
  priceCents: Cents,
  gpuCount: number,
): Recovery {
  const gross = mulDivHalfEven([remainingMs, priceCents, gpuCount], HOUR_MS);
  const { fee, payout } = splitFee(gross);
  return { grossCents: gross, feeCents: fee, netCents: payout };
}

/** D27 matched form: a sale of `hours` hours of `gpus` GPUs at `priceCents`. */
export function saleRecovery(priceCents: Cents, gpus: number, hours: number): Recovery {
  const gross = priceCents * gpus * hours;
  const { fee, payout } = splitFee(gross);
  return { grossCents: gross, feeCents: fee, netCents: payout };
}
