import { afterEach, describe, expect, it, vi } from 'vitest';

import { Ticker } from './ticker.js';

describe('Ticker', () => {
  it('never runs its task twice at once, and stop() waits for the run under way', async () => {
    let running = 0;
    let most = 0;
    let runs = 0;
    let release!: () => void;
    const ticker = new Ticker(60_000, async () => {
      running++;
      most = Math.max(most, running);
      await new Promise<void>((r) => (release = r));
      running--;
      runs++;
    });
    const first = ticker.runNow();
    const second = ticker.runNow();
    const stopped = ticker.stop();
    release();
    await Promise.all([first, second, stopped]);
    expect({ runs, most, running }).toEqual({ runs: 1, most: 1, running: 0 });
    await ticker.runNow();
    expect(runs).toBe(1);
  });
});

describe('Ticker.nudge', () => {
  // Fake timers: the schedule is asserted in the ticker's own time, not measured.
  const setUp = () => {
    vi.useFakeTimers({ now: 0 });
    const starts: number[] = [];
    const ticker = new Ticker(
      10_000,
      () => {
        starts.push(Date.now());
        return Promise.resolve();
      },
      { minGapMs: 5_000 },
    );
    return { ticker, starts };
  };
  afterEach(() => {
    vi.useRealTimers();
  });

  it('many nudges within half an interval of the last run make one run, half an interval after it', async () => {
    const { ticker, starts } = setUp();
    ticker.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(starts).toEqual([0]);
    for (let t = 0; t < 20; t++) {
      ticker.nudge();
      await vi.advanceTimersByTimeAsync(100);
    }
    await vi.advanceTimersByTimeAsync(3_000);
    expect(starts).toEqual([0, 5_000]);
    // The schedule goes on from the nudged run.
    await vi.advanceTimersByTimeAsync(10_000);
    expect(starts).toEqual([0, 5_000, 15_000]);
    await ticker.stop();
  });

  it('a nudge long after the last run runs at once', async () => {
    const { ticker, starts } = setUp();
    ticker.start();
    await vi.advanceTimersByTimeAsync(7_000);
    ticker.nudge();
    await vi.advanceTimersByTimeAsync(0);
    expect(starts).toEqual([0, 7_000]);
    await ticker.stop();
  });

  it('nudged without pause, it runs at most twice per interval', async () => {
    const { ticker, starts } = setUp();
    ticker.start();
    for (let t = 0; t < 60_000; t += 250) {
      ticker.nudge();
      await vi.advanceTimersByTimeAsync(250);
    }
    for (let i = 1; i < starts.length; i++) {
      expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(5_000);
    }
    expect(starts.length).toBeLessThanOrEqual(13);
    await ticker.stop();
  });

  it('a nudge during a run makes one more run after it, not sooner than the gap', async () => {
    vi.useFakeTimers({ now: 0 });
    const starts: number[] = [];
    let release: (() => void) | undefined;
    const ticker = new Ticker(
      10_000,
      async () => {
        starts.push(Date.now());
        if (starts.length === 1) await new Promise<void>((r) => (release = r));
      },
      { minGapMs: 5_000 },
    );
    ticker.start();
    await vi.advanceTimersByTimeAsync(1_000);
    ticker.nudge();
    ticker.nudge();
    release?.();
    await vi.advanceTimersByTimeAsync(4_000);
    expect(starts).toEqual([0, 5_000]);
    await vi.advanceTimersByTimeAsync(9_000);
    expect(starts).toEqual([0, 5_000]);
    await ticker.stop();
  });

  it('after stop() a nudge does nothing', async () => {
    const { ticker, starts } = setUp();
    await ticker.stop();
    ticker.nudge();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(starts).toEqual([]);
  });
});
