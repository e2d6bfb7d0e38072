import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HOUR_MS } from './enums.js';
import { GpuxError } from './errors.js';
import {
  MAX_CENTS,
  MoneyError,
  formatDollars,
  mulDivHalfEven,
  parseDollars,
  parsePositiveDollars,
  percentOf,
  roundHalfEvenDiv,
  splitFee,
} from './money.js';

const cents = fc.integer({ min: 0, max: MAX_CENTS });

/** Reference rounding done the slow, obvious way: compare the remainder to half. */
function referenceHalfEven(n: bigint, d: bigint): bigint {
  const sign = n < 0n !== d < 0n ? -1n : 1n;
  const an = n < 0n ? -n : n;
  const ad = d < 0n ? -d : d;
  const q = an / ad;
  const r = an - q * ad;
  let rounded = q;
  if (2n * r > ad) rounded = q + 1n;
  else if (2n * r === ad) rounded = q % 2n === 0n ? q : q + 1n;
  return sign * rounded;
}

describe('parseDollars', () => {
  it.each([
    [0, 0],
    [1, 100],
    [0.3, 30],
    [2.5, 250],
    [12.34, 1234],
    [1e9, MAX_CENTS],
    ['12.34', 1234],
    ['0.10', 10],
    ['7', 700],
    ['1e2', 10_000],
    ['1.5e-1', 15],
  ] as const)('parses %j as %i cents', (input, expected) => {
    expect(parseDollars(input)).toBe(expected);
  });

  it.each([
    NaN,
    Infinity,
    -Infinity,
    -0.01,
    0.001,
    1.005,
    0.1 + 0.2,
    1e-7,
    1e21,
    1e9 + 0.01,
    '1.001',
    '-1',
    '',
    'abc',
    '1,5',
    '0x10',
    '1e999999999',
    null,
    undefined,
    true,
    {},
    [1],
  ])('rejects %j with invalid_request naming the field', (input) => {
    const attempt = (): number => parseDollars(input, 'limit_price');
    expect(attempt).toThrow(MoneyError);
    expect(attempt).toThrow(/^limit_price /);
    try {
      attempt();
    } catch (err) {
      expect(err).toBeInstanceOf(GpuxError);
      expect((err as MoneyError).code).toBe('invalid_request');
      expect((err as MoneyError).name).toBe('MoneyError');
    }
  });

  it('parsePositiveDollars rejects zero', () => {
    expect(() => parsePositiveDollars(0)).toThrow(/price must be greater than 0/);
    expect(parsePositiveDollars(0.01)).toBe(1);
  });

  it('property: parse(format(c)) === c', () => {
    fc.assert(fc.property(cents, (c) => parseDollars(formatDollars(c)) === c));
  });

  it('property: the JSON text of format(c) round-trips as well', () => {
    fc.assert(
      fc.property(cents, (c) => parseDollars(JSON.parse(JSON.stringify(formatDollars(c)))) === c),
    );
  });
});

describe('formatDollars', () => {
  it('shows no binary floating point noise', () => {
    expect(formatDollars(30)).toBe(0.3);
    expect(JSON.stringify(formatDollars(1005))).toBe('10.05');
    expect(formatDollars(-250)).toBe(-2.5);
  });

  it('rejects non-integer cents', () => {
    expect(() => formatDollars(1.5)).toThrow(RangeError);
  });
});

describe('roundHalfEvenDiv', () => {
  it.each([
    [5n, 2n, 2n],
    [7n, 2n, 4n],
    [-5n, 2n, -2n],
    [-7n, 2n, -4n],
    [5n, -2n, -2n],
    [1n, 3n, 0n],
    [2n, 3n, 1n],
    [25n, 10n, 2n],
    [35n, 10n, 4n],
    [0n, 7n, 0n],
  ])('%i / %i -> %i', (n, d, expected) => {
    expect(roundHalfEvenDiv(n, d)).toBe(expected);
  });

  it('rejects a zero divisor', () => {
    expect(() => roundHalfEvenDiv(1n, 0n)).toThrow(RangeError);
  });

  it('property: matches the reference on random inputs', () => {
    const nonZero = fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).filter((d) => d !== 0n);
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }), nonZero, (n, d) => {
        expect(roundHalfEvenDiv(n, d)).toBe(referenceHalfEven(n, d));
      }),
    );
  });

  it('property: ties are hit and go to even', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), (k) => {
        // (2k + 1) / 2 is always a tie; the result must be even.
        expect(roundHalfEvenDiv(2n * k + 1n, 2n) % 2n).toBe(0n);
      }),
    );
  });
});

describe('mulDivHalfEven', () => {
  it('computes a refund whose intermediate product exceeds 2^53', () => {
    // $9,999.99/GPU/h × 512 GPUs × 719 h 20.6 min remaining, in ms.
    const remainingMs = 719 * HOUR_MS + 1_234_567;
    expect(999_999 * 512 * remainingMs).toBeGreaterThan(Number.MAX_SAFE_INTEGER);
    // Exact: 1325891572411101696 / 3600000 = 368303214558 rem 2301696 (> half) -> up.
    expect(mulDivHalfEven([999_999, 512, remainingMs], HOUR_MS)).toBe(368_303_214_559);
  });

  it('rounds the exact rational once', () => {
    // 1 cent × 8 GPUs × 1/16 h = 0.5 cent -> 0 (even); × 3/16 h = 1.5 -> 2.
    expect(mulDivHalfEven([1, 8, HOUR_MS / 16], HOUR_MS)).toBe(0);
    expect(mulDivHalfEven([1, 8, (3 * HOUR_MS) / 16], HOUR_MS)).toBe(2);
  });

  it('rejects non-integer factors and unsafe results', () => {
    expect(() => mulDivHalfEven([1.5, 2], 1)).toThrow(RangeError);
    expect(() => mulDivHalfEven([2n ** 60n], 1)).toThrow(RangeError);
  });
});

describe('fees (D2)', () => {
  it('takes 10% rounded half-even', () => {
    expect(percentOf(1000, 10)).toBe(100);
    expect(percentOf(5, 10)).toBe(0); // 0.5 -> 0
    expect(percentOf(15, 10)).toBe(2); // 1.5 -> 2
    expect(splitFee(12_345)).toEqual({ fee: 1234, payout: 11_111 }); // 1234.5 -> 1234
  });

  it('property: fee + payout === compute, fee within half a cent of 10%', () => {
    fc.assert(
      fc.property(cents, (compute) => {
        const { fee, payout } = splitFee(compute);
        expect(fee + payout).toBe(compute);
        expect(Math.abs(fee * 10 - compute)).toBeLessThanOrEqual(5);
        expect(Number.isInteger(fee) && Number.isInteger(payout)).toBe(true);
      }),
    );
  });
});
