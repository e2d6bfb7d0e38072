import { describe, expect, it } from 'vitest';

import { Ring } from './ring.js';

describe('Ring', () => {
  it('holds the last `capacity` events and gives those after a number, when it holds them all', () => {
    const ring = new Ring<string>(3);
    expect(ring.after(0)).toBeUndefined();
    for (let s = 5; s <= 9; s++) ring.push(s, `e${s}`);
    expect(ring.length).toBe(3);
    expect(ring.after(9)).toEqual([]);
    expect(ring.after(8)).toEqual(['e9']);
    expect(ring.after(6)).toEqual(['e7', 'e8', 'e9']);
    expect(ring.after(5)).toBeUndefined();
    expect(ring.after(10)).toBeUndefined();
  });

  it('takes consecutive numbers only, and starts anew after clear()', () => {
    const ring = new Ring<string>(2);
    ring.push(1, 'a');
    expect(() => ring.push(3, 'c')).toThrow(/3 after 1/);
    ring.clear();
    ring.push(10, 'x');
    expect(ring.after(9)).toEqual(['x']);
    expect(ring.after(1)).toBeUndefined();
    expect(() => new Ring(0)).toThrow();
  });
});
