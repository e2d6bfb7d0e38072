import { ValidationError } from '@gpux/shared';
import { describe, expect, it } from 'vitest';

import { GRANULARITIES, MAX_CANDLES, candleRange } from './candles.js';

const DAY = 86_400_000;
const T = Date.UTC(2026, 10, 22);

describe('candleRange', () => {
  it('aligns every granularity on the epoch, so a day splits at UTC midnight', () => {
    for (const g of GRANULARITIES) expect(DAY % (g * 1000)).toBe(0);
    // 6-hour candles start at 00:00, 06:00, 12:00 and 18:00 UTC.
    const r = candleRange({ granularity: 21600, start: T + 7 * 3_600_000, end: T + DAY }, 0);
    expect(r).toEqual({ startMs: T + 6 * 3_600_000, endMs: T + DAY, stepMs: 21_600_000 });
  });

  it('takes end as the end of the interval in progress, and start as the most intervals back', () => {
    const now = T + 90_500;
    expect(candleRange({ granularity: 60, start: undefined, end: undefined }, now)).toEqual({
      startMs: T + 120_000 - MAX_CANDLES * 60_000,
      endMs: T + 120_000,
      stepMs: 60_000,
    });
    // Now at an interval's start: that interval is in progress, and covered.
    expect(candleRange({ granularity: 60, start: undefined, end: undefined }, T).endMs).toBe(
      T + 60_000,
    );
    // end given: now does not matter.
    expect(candleRange({ granularity: 60, start: undefined, end: T }, now)).toEqual({
      startMs: T - MAX_CANDLES * 60_000,
      endMs: T,
      stepMs: 60_000,
    });
  });

  it('refuses start at or after end, and more than the most intervals', () => {
    const refusal = (start: number, end: number): ValidationError | undefined => {
      try {
        candleRange({ granularity: 60, start, end }, 0);
        return undefined;
      } catch (err) {
        return err as ValidationError;
      }
    };
    expect(refusal(T, T)?.problems).toMatchObject([{ field: 'start', rule: 'conflict' }]);
    expect(refusal(T + 1, T)).toBeInstanceOf(ValidationError);
    expect(refusal(T, T + MAX_CANDLES * 60_000)).toBeUndefined();
    expect(refusal(T, T + MAX_CANDLES * 60_000 + 1)?.message).toBe(
      `start to end spans 301 intervals of 60 s, and a request covers at most ${MAX_CANDLES}: narrow the range or take a larger granularity`,
    );
    // Before 1970 too.
    expect(refusal(-DAY, T)?.message).toContain('intervals of 60 s');
  });
});
