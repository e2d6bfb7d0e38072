// The polling helper every test waits with: it returns what the probe found,
// gives up with the processes' output, and stops at a probe's error.

import { describe, expect, it } from 'vitest';

import { until, untilWith } from './until.js';

describe('until', () => {
  it('returns the first value that is neither false nor undefined', async () => {
    let tries = 0;
    const found = await until('the third try', () => (++tries === 3 ? 'found' : undefined), {
      everyMs: 1,
    });
    expect(found).toBe('found');
    expect(tries).toBe(3);
    await expect(until('a condition', () => Promise.resolve(true))).resolves.toBe(true);
  });

  it('gives up after timeoutMs, naming what it waited for, with the output', async () => {
    const started = performance.now();
    await expect(
      until('never', () => false, { timeoutMs: 60, everyMs: 5, output: () => 'the log' }),
    ).rejects.toThrow('gave up after 60 ms waiting for never\nthe log');
    expect(performance.now() - started).toBeGreaterThanOrEqual(60);
  });

  it("stops at the probe's error", async () => {
    let tries = 0;
    await expect(
      until('a crash', () => {
        tries++;
        throw new Error('exited');
      }),
    ).rejects.toThrow('exited');
    expect(tries).toBe(1);
  });

  it('untilWith sets defaults a call can still override', async () => {
    const quick = untilWith({ timeoutMs: 30, everyMs: 5, output: () => 'out' });
    await expect(quick('x', () => false)).rejects.toThrow('gave up after 30 ms waiting for x\nout');
    await expect(quick('y', () => false, { timeoutMs: 10 })).rejects.toThrow(
      'gave up after 10 ms waiting for y\nout',
    );
  });
});
