// Decision D1: money is exact. Amounts are integer cents; prorated amounts are
// computed as exact rationals in BigInt and rounded half-even once, at the end.

import { PLATFORM_FEE_PERCENT } from './enums.js';
import { ValidationError } from './errors.js';
import type { FieldRule } from './errors.js';

/** An integer number of US cents. */
export type Cents = number;

/** Larger prices or balances are input mistakes, not trades ($1e9). */
export const MAX_CENTS: Cents = 100_000_000_000;

/** A money field that is not a whole, in-range number of cents; names the field and the rule. */
export class MoneyError extends ValidationError {
  override readonly name = 'MoneyError';
  readonly field: string;

  constructor(field: string, rule: FieldRule, message: string, limit?: number) {
    super([
      { field, rule, message: `${field} ${message}`, ...(limit === undefined ? {} : { limit }) },
    ]);
    this.field = field;
  }
}

// Plain or exponent notation, as JSON numbers and Number#toString produce it.
const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/i;

/**
 * Dollars (a JSON number, or a numeric string) to cents. Accepts only values
 * that are a whole number of cents, >= 0 and <= MAX_CENTS; rounds nothing.
 */
export function parseDollars(x: unknown, field = 'amount'): Cents {
  let text: string;
  if (typeof x === 'number') {
    if (!Number.isFinite(x)) throw new MoneyError(field, 'type', 'must be a finite number');
    // The shortest string that round-trips is the decimal the client meant.
    text = String(x);
  } else if (typeof x === 'string') {
    text = x.trim();
  } else {
    throw new MoneyError(field, 'type', 'must be a number of dollars');
  }
  const m = DECIMAL.exec(text);
  if (m === null) throw new MoneyError(field, 'type', 'must be a number of dollars');
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = m;

  // value = digits × 10^scale
  let digits = (whole + fraction).replace(/^0+/, '');
  let scale = Number(exponent) - fraction.length;
  if (digits === '') return 0;
  if (sign === '-') throw new MoneyError(field, 'minimum', 'must not be negative', 0);
  const trailingZeros = /0*$/.exec(digits)?.[0].length ?? 0;
  digits = digits.slice(0, digits.length - trailingZeros);
  scale += trailingZeros;

  if (scale < -2)
    throw new MoneyError(field, 'multiple_of', 'must be whole cents (at most 2 decimals)', 0.01);
  // Checked before building the BigInt so "1e999999" costs nothing.
  if (digits.length + scale > 13)
    throw new MoneyError(field, 'maximum', tooLarge(), MAX_CENTS / 100);
  const cents = BigInt(digits) * 10n ** BigInt(scale + 2);
  if (cents > BigInt(MAX_CENTS))
    throw new MoneyError(field, 'maximum', tooLarge(), MAX_CENTS / 100);
  return Number(cents);
}

/** Like parseDollars, for prices: zero is rejected too. */
export function parsePositiveDollars(x: unknown, field = 'price'): Cents {
  const cents = parseDollars(x, field);
  if (cents === 0) throw new MoneyError(field, 'minimum', 'must be greater than 0', 0);
  return cents;
}

function tooLarge(): string {
  return `must be at most ${MAX_CENTS / 100} dollars`;
}

/** Cents to the JSON number of dollars. Exact: c/100 is the double nearest c/100. */
export function formatDollars(c: Cents): number {
  assertCents(c);
  return c / 100;
}

export function assertCents(c: Cents, what = 'amount'): void {
  if (!Number.isSafeInteger(c)) throw new RangeError(`${what} must be integer cents, got ${c}`);
}

/** numerator / denominator rounded to the nearest integer, ties to even. */
export function roundHalfEvenDiv(numerator: bigint, denominator: bigint): bigint {
  if (denominator === 0n) throw new RangeError('division by zero');
  if (denominator < 0n) {
    numerator = -numerator;
    denominator = -denominator;
  }
  let q = numerator / denominator;
  let r = numerator % denominator;
  // Floor division, so 0 <= r < denominator whatever the sign of the numerator.
  if (r < 0n) {
    q -= 1n;
    r += denominator;
  }
  const twice = 2n * r;
  if (twice > denominator || (twice === denominator && q % 2n !== 0n)) q += 1n;
  return q;
}

/**
 * product(factors) / divisor in exact arithmetic, rounded half-even once.
 * E.g. a refund: mulDivHalfEven([rateCents, gpus, remainingMs], HOUR_MS), whose
 * intermediate product exceeds 2^53.
 */
export function mulDivHalfEven(
  factors: readonly (number | bigint)[],
  divisor: number | bigint,
): Cents {
  let product = 1n;
  for (const f of factors) product *= toBigInt(f);
  const result = roundHalfEvenDiv(product, toBigInt(divisor));
  if (result > BigInt(Number.MAX_SAFE_INTEGER) || result < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new RangeError(`result ${result} is not a safe integer`);
  }
  return Number(result);
}

function toBigInt(x: number | bigint): bigint {
  if (typeof x === 'bigint') return x;
  if (!Number.isSafeInteger(x)) throw new RangeError(`expected a safe integer, got ${x}`);
  return BigInt(x);
}

/** pct percent of c, rounded half-even to the cent. */
export function percentOf(c: Cents, pct: number | bigint): Cents {
  return mulDivHalfEven([c, pct], 100);
}

export interface FeeSplit {
  /** The platform's share (D2). */
  readonly fee: Cents;
  /** What the seller receives; fee + payout === compute, always. */
  readonly payout: Cents;
}

/** D2: the fee is computed once and the payout is the remainder, so nothing is created or lost. */
export function splitFee(compute: Cents, pct: number = PLATFORM_FEE_PERCENT): FeeSplit {
  const fee = percentOf(compute, pct);
  return { fee, payout: compute - fee };
}
