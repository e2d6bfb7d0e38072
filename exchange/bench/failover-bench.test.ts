import { describe, expect, it } from 'vitest';

import { failoverLine, parseFailoverArgs } from './failover-bench.js';

describe('bench failover', () => {
  it('reads its options, refusing what it does not know', () => {
    expect(parseFailoverArgs(['failover'])).toEqual({
      runs: 5,
      clients: 4,
      leaseSeconds: undefined,
    });
    expect(
      parseFailoverArgs(['failover', '--runs', '3', '--clients', '2', '--lease', '4']),
    ).toEqual({
      runs: 3,
      clients: 2,
      leaseSeconds: 4,
    });
    expect(() => parseFailoverArgs(['--runs', '0'])).toThrow(/usage/);
    expect(() => parseFailoverArgs(['--lease', '61'])).toThrow(/usage/);
    expect(() => parseFailoverArgs(['--fast'])).toThrow(/usage/);
  });

  it('prints the summary line in the form of issue 18', () => {
    expect(failoverLine([3.1, 2.9, 3.5], [0.2, 0.4], 0)).toBe(
      'failover: kill-9 p50 3.10 s max 3.50 s | sigterm p50 0.20 s max 0.40 s | lost 0',
    );
  });
});
