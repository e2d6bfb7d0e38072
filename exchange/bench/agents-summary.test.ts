import { describe, expect, it } from 'vitest';

import { restBoundMs, summaryLine, targetsMet, verdictLine } from './agents-summary.js';

const figures = {
  agents: 5000,
  heartbeatP50Ms: 3.214,
  heartbeatP99Ms: 41.27,
  restP99Ms: 12.06,
  restAloneP99Ms: 5.5,
  floodRestP99Ms: 143.7,
  errors: 0,
};

describe('the agents bench summary', () => {
  it('has the fixed form of the issue', () => {
    expect(summaryLine(figures)).toBe(
      'agents: n=5000 heartbeat p50 3.21 ms p99 41.3 ms | rest p99 12.1 ms (alone 5.50 ms) | flood rest p99 144 ms | errors 0',
    );
    expect(summaryLine(figures)).toMatch(
      /^agents: n=\d+ heartbeat p50 \S+ ms p99 \S+ ms \| rest p99 \S+ ms \(alone \S+ ms\) \| flood rest p99 \S+ ms \| errors \d+$/,
    );
  });

  it('judges the targets: heartbeat p99 ≤ 50 ms, REST ≤ 2 × alone + 5 ms, flood ≤ 100 ms, no errors', () => {
    expect(restBoundMs(5.5)).toBe(16);
    expect(targetsMet(figures)).toEqual({
      heartbeat: true,
      rest: true,
      flood: false,
      errors: true,
    });
    expect(targetsMet({ ...figures, restP99Ms: 16.01, errors: 1 })).toMatchObject({
      rest: false,
      errors: false,
    });
    expect(targetsMet({ ...figures, heartbeatP99Ms: NaN })).toMatchObject({ heartbeat: false });
    expect(verdictLine(figures)).toBe(
      'targets: heartbeat p99 ≤ 50 ms met (41.3 ms); rest p99 with agents ≤ 2 × alone + 5 ms = 16.0 ms met (12.1 ms); flood rest p99 ≤ 100 ms NOT met (144 ms); errors 0 met (0)',
    );
  });
});
