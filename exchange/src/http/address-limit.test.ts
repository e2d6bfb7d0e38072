import { describe, expect, it } from 'vitest';

import { AddressLimiter } from './address-limit.js';

describe('AddressLimiter', () => {
  it('allows a burst of perMinute per address, then one more each 60/perMinute s', () => {
    let t = 0;
    const limiter = new AddressLimiter(6, () => t);
    for (let i = 0; i < 6; i++) expect(limiter.take('a').allowed).toBe(true);
    expect(limiter.take('a')).toEqual({ allowed: false, retryAfterSeconds: 10 });
    expect(limiter.take('b').allowed).toBe(true);
    t += 4_000;
    expect(limiter.take('a')).toEqual({ allowed: false, retryAfterSeconds: 6 });
    t += 6_000;
    expect(limiter.take('a').allowed).toBe(true);
    expect(limiter.take('a').allowed).toBe(false);
    // Refilled, never above the burst.
    t += 3_600_000;
    for (let i = 0; i < 6; i++) expect(limiter.take('a').allowed).toBe(true);
    expect(limiter.take('a').allowed).toBe(false);
  });
});
