import { describe, expect, it } from 'vitest';

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
