import { describe, expect, it } from 'vitest';

import { StreamRegistry } from './streams.js';

describe('StreamRegistry', () => {
  it('counts streams per address up to the limit, and ends them all on closeAll', () => {
    const streams = new StreamRegistry(2);
    expect([streams.admit('a'), streams.admit('a'), streams.admit('a')]).toEqual([
      true,
      true,
      false,
    ]);
    expect(streams.admit('b')).toBe(true);
    const closed: string[] = [];
    const s = {
      close: (reason: string) => {
        closed.push(reason);
        streams.release('a', s);
      },
    };
    streams.track(s);
    streams.release('a');
    expect(streams.admit('a')).toBe(true);
    streams.closeAll('unavailable');
    expect(closed).toEqual(['unavailable']);
    expect(streams.size).toBe(0);
    expect(streams.admit('a')).toBe(true);
  });
});
