// How queued events reach watchers (feed/fan-out.ts): one buffer for all,
// written a slice of watchers per turn of the event loop; the next write
// only once the last reached everyone; a watcher that joined in between
// gets only what came after its start.

import { afterEach, describe, expect, it, vi } from 'vitest';

import { FanOut, flushDelayMs } from './fan-out.js';
import type { Entry } from './fan-out.js';
import { FakeSink } from './testing/fake-sink.js';
import { Watcher } from './watcher.js';

const level = (seq: number): Entry => ({ seq, event: 'level', data: { sequence: seq } });
/** Runs the next timer or turn the fan-out scheduled (the clock is vitest's). */
const turn = (): void => {
  vi.advanceTimersToNextTimer();
};

afterEach(() => {
  vi.useRealTimers();
});

function watchers(n: number, through: number): { set: Set<Watcher>; sinks: FakeSink[] } {
  const set = new Set<Watcher>();
  const sinks: FakeSink[] = [];
  for (let i = 0; i < n; i++) {
    const sink = new FakeSink();
    const w = new Watcher(sink, 1 << 20, () => set.delete(w));
    w.through = through;
    set.add(w);
    sinks.push(sink);
  }
  return { set, sinks };
}

describe('FanOut', () => {
  it('writes less often the more watchers there are, at least every 25 ms', () => {
    expect([1, 39, 40, 400, 1000, 100_000].map(flushDelayMs)).toEqual([0, 0, 1, 10, 25, 25]);
  });

  it('writes an event after a quiet spell at once, and one soon after a write once the interval has passed', () => {
    vi.useFakeTimers();
    const { set, sinks } = watchers(40, 0);
    const fan = new FanOut(set, 0);
    fan.queue([level(1)], 1);
    fan.queue([level(2)], 2);
    // Only the event loop's turn: both together.
    vi.advanceTimersByTime(0);
    expect(sinks[0]?.chunks).toHaveLength(1);
    // 40 watchers: at most one write a millisecond.
    fan.queue([level(3)], 3);
    vi.advanceTimersByTime(0);
    expect(sinks[0]?.chunks).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(sinks[0]?.chunks).toHaveLength(2);
    expect(sinks.every((s) => s.events.map((e) => e.id).join() === '1,2,3')).toBe(true);
    // Quiet since: the next goes at once.
    vi.advanceTimersByTime(50);
    fan.queue([level(4)], 4);
    vi.advanceTimersByTime(0);
    expect(sinks[0]?.chunks).toHaveLength(3);
  });

  it('writes one buffer to every watcher, 100 a turn; what is queued meanwhile waits for the write to reach everyone', () => {
    vi.useFakeTimers();
    const { set, sinks } = watchers(250, 0);
    const fan = new FanOut(set, 0);
    fan.queue([level(1), level(2)], 2);
    // Nothing written yet: the write waits for the event loop's turn.
    expect(sinks.every((s) => s.chunks.length === 0)).toBe(true);
    turn();
    // The first slice: 100 watchers, each the same two events in one write.
    expect(sinks.filter((s) => s.chunks.length === 1)).toHaveLength(100);
    expect(sinks[0]?.events.map((e) => e.id)).toEqual([1, 2]);
    // One joins with everything up to 3, and 3 is queued, while the write goes on.
    const late = new FakeSink();
    const joined = new Watcher(late, 1 << 20, () => undefined);
    joined.through = 3;
    set.add(joined);
    fan.queue([level(3)], 3);
    turn();
    turn();
    expect(sinks.every((s) => s.chunks.length === 1)).toBe(true);
    turn();
    turn();
    turn();
    expect(sinks.every((s) => s.events.map((e) => e.id).join() === '1,2,3')).toBe(true);
    expect(late.chunks).toEqual([]);
    // A heartbeat repeats the last number: to everyone, the joiner too.
    fan.heartbeat({ seq: 3, event: 'heartbeat', data: {} });
    fan.flushAll();
    expect(late.events.map((e) => e.event)).toEqual(['heartbeat']);
    expect(sinks.every((s) => s.events.at(-1)?.event === 'heartbeat')).toBe(true);
  });

  it('flushAll() delivers everything at once; drop() forgets what is queued', () => {
    const { set, sinks } = watchers(150, 0);
    const fan = new FanOut(set, 0);
    fan.queue([level(1)], 1);
    fan.flushAll();
    expect(sinks.every((s) => s.events.length === 1)).toBe(true);
    fan.queue([level(2)], 2);
    fan.drop(2);
    fan.flushAll();
    expect(sinks.every((s) => s.events.length === 1)).toBe(true);
  });
});
