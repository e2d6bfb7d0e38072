// Waiting in a test: poll a condition until it holds, never sleep a fixed
// time. The one helper for every test file (it was copied into six).

import { setTimeout as delay } from 'node:timers/promises';

export interface Polling {
  /** Give up after this many milliseconds. Default 20 000. */
  readonly timeoutMs?: number;
  /** Milliseconds between tries. Default 50. */
  readonly everyMs?: number;
  /** Added to the error when it gives up: what the processes under test printed. */
  readonly output?: () => string;
}

/**
 * Calls `probe` until it returns something other than `false` or
 * `undefined`, and returns that (so `true` for a plain condition); throws
 * after `timeoutMs`, naming `what` it waited for. What `probe` throws ends
 * the wait at once.
 */
export async function until<T>(
  what: string,
  probe: () => T | false | undefined | Promise<T | false | undefined>,
  polling: Polling = {},
): Promise<T> {
  const { timeoutMs = 20_000, everyMs = 50, output } = polling;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (performance.now() > deadline) {
      const printed = output === undefined ? '' : `\n${output()}`;
      throw new Error(`gave up after ${timeoutMs} ms waiting for ${what}${printed}`);
    }
    await delay(everyMs);
  }
}

/** `until` with other defaults: a test file's pace, its processes' output. */
export function untilWith(defaults: Polling): typeof until {
  return (what, probe, polling = {}) => until(what, probe, { ...defaults, ...polling });
}
