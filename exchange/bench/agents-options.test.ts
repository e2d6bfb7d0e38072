import { describe, expect, it } from 'vitest';

import {
  AGENTS_DEFAULTS,
  AgentsUsageError,
  fleetCount,
  parseAgentsArgs,
  shares,
  sliceOf,
} from './agents-options.js';

describe('parseAgentsArgs', () => {
  it('defaults to the issue’s run: 5,000 agents, 200 REST requests/s, floods of 2,000', () => {
    expect(parseAgentsArgs(['agents'])).toEqual(AGENTS_DEFAULTS);
    expect(AGENTS_DEFAULTS).toMatchObject({ agents: 5_000, rate: 200, interval: 5, flood: 2_000 });
  });

  it('takes --flag value and --flag=value', () => {
    expect(
      parseAgentsArgs([
        'agents',
        '--agents',
        '300',
        '--seconds=10',
        '--rate',
        '150.5',
        '--interval',
        '2',
        '--flood=500',
        '--flood-seconds',
        '4',
        '--fleets',
        '3',
        '--connections',
        '8',
        '--seed',
        '7',
      ]),
    ).toEqual({
      agents: 300,
      seconds: 10,
      rate: 150.5,
      interval: 2,
      flood: 500,
      floodSeconds: 4,
      fleets: 3,
      connections: 8,
      seed: 7,
    });
  });

  it('asks for help', () => {
    expect(parseAgentsArgs(['agents', '--help'])).toBe('help');
    expect(parseAgentsArgs(['-h'])).toBe('help');
  });

  it.each([
    [['--agents', '0'], '--agents: expected a whole number from 1 to 20000, got 0'],
    [['--agents', '2.5'], '--agents: expected a whole number'],
    [['--agents'], 'got nothing'],
    [['--seconds', 'ten'], '--seconds: expected a number'],
    [['--interval', '301'], '--interval: expected a whole number from 1 to 300'],
    [['--warmup', '3'], 'unknown argument --warmup'],
    [['http'], 'unknown argument http'],
  ])('refuses %j', (args, message) => {
    expect(() => parseAgentsArgs(args)).toThrow(AgentsUsageError);
    expect(() => parseAgentsArgs(args)).toThrow(message);
  });
});

describe('fleetCount', () => {
  it('one process per 1,000 agents unless told, never more than the agents', () => {
    expect(fleetCount({ ...AGENTS_DEFAULTS })).toBe(5);
    expect(fleetCount({ ...AGENTS_DEFAULTS, agents: 300 })).toBe(1);
    expect(fleetCount({ ...AGENTS_DEFAULTS, agents: 1_001 })).toBe(2);
    expect(fleetCount({ ...AGENTS_DEFAULTS, fleets: 3 })).toBe(3);
    expect(fleetCount({ ...AGENTS_DEFAULTS, agents: 2, fleets: 8 })).toBe(2);
  });
});

describe('sliceOf and shares', () => {
  it('split the agents over the fleets, every agent in exactly one', () => {
    const slices = [0, 1, 2].map((k) => sliceOf(k, 3, 1000));
    expect(slices).toEqual([
      { from: 0, to: 333 },
      { from: 333, to: 666 },
      { from: 666, to: 1000 },
    ]);
  });

  it('spread a flood of many clusters over the fleets in proportion, summing to it', () => {
    expect(shares(2000, 5, 5000)).toEqual([400, 400, 400, 400, 400]);
    expect(shares(100, 3, 1000)).toEqual([33, 34, 33]);
    expect(shares(300, 1, 300)).toEqual([300]);
    const s = shares(2000, 7, 2500);
    expect(s.reduce((a, b) => a + b, 0)).toBe(2000);
    s.forEach((n, k) => {
      const { from, to } = sliceOf(k, 7, 2500);
      expect(n).toBeLessThanOrEqual(to - from);
    });
  });
});
