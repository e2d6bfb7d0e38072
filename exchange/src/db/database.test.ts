import { describe, expect, it } from 'vitest';

import { parseInt8 } from './database.js';

describe('parseInt8 (D1: money read back as exact integers)', () => {
  it('reads safe integers and refuses anything past 2^53', () => {
    expect(parseInt8('9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
    expect(parseInt8('-42')).toBe(-42);
    expect(() => parseInt8('9007199254740993')).toThrow(RangeError);
  });
});
