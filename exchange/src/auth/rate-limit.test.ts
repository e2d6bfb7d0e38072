import { describe, expect, it } from 'vitest';

import { RateLimiter } from './rate-limit.js';

describe('RateLimiter (D18: per account, sliding minute)', () => {
  it('allows the limit within a minute, then refuses until the oldest request is a minute old', () => {
    let now = 0;
    const limiter = new RateLimiter({ query: 3, create: 1, cancel: 2 }, 60_000, () => now);
    expect(limiter.take('a', 'query')).toEqual({
      allowed: true,
      limit: 3,
      remaining: 2,
      resetSeconds: 0,
      at: 0,
    });
    now = 10_000;
    limiter.take('a', 'query');
    now = 20_000;
    expect(limiter.take('a', 'query')).toMatchObject({
      allowed: true,
      remaining: 0,
      resetSeconds: 40,
    });
    now = 30_000;
    expect(limiter.take('a', 'query')).toMatchObject({
      allowed: false,
      remaining: 0,
      resetSeconds: 30,
    });
    // Sliding: at 60 s the first request leaves the window, one slot frees.
    now = 60_000;
    expect(limiter.take('a', 'query')).toMatchObject({ allowed: true, remaining: 0 });
    expect(limiter.take('a', 'query')).toMatchObject({ allowed: false });
  });

  it('gives a slot back (a replay, D18), and nothing once it left the window', () => {
    let now = 0;
    const limiter = new RateLimiter({ query: 1, create: 2, cancel: 1 }, 60_000, () => now);
    const first = limiter.take('a', 'create');
    now = 1_000;
    limiter.take('a', 'create');
    expect(limiter.take('a', 'create').allowed).toBe(false);
    limiter.giveBack('a', 'create', first.at);
    expect(limiter.take('a', 'create')).toMatchObject({ allowed: true, remaining: 0 });
    now = 70_000;
    limiter.giveBack('a', 'create', 1_000);
    expect(limiter.take('a', 'create')).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('counts accounts and kinds apart', () => {
    const limiter = new RateLimiter({ query: 1, create: 1, cancel: 1 }, 60_000, () => 0);
    expect(limiter.take('a', 'create').allowed).toBe(true);
    expect(limiter.take('a', 'create').allowed).toBe(false);
    expect(limiter.take('a', 'cancel').allowed).toBe(true);
    expect(limiter.take('a', 'query').allowed).toBe(true);
    expect(limiter.take('b', 'create').allowed).toBe(true);
  });
});
