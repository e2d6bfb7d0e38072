import { describe, expect, it } from 'vitest';
import { ID_PREFIXES, createIdGenerator, idTime, isId, newId } from './ids.js';

describe('newId', () => {
  it('makes a valid id for every prefix', () => {
    for (const prefix of Object.values(ID_PREFIXES)) {
      const id = newId(prefix);
      expect(id).toHaveLength(prefix.length + 26);
      expect(isId(prefix, id)).toBe(true);
    }
  });

  it('encodes the creation time', () => {
    const gen = createIdGenerator({ now: () => 1_700_000_000_123 });
    expect(idTime(gen('ord_'))).toBe(1_700_000_000_123);
  });

  it('is strictly increasing within one millisecond and when the clock steps back', () => {
    const times = [5, 5, 5, 4, 4, 6, 6];
    let i = 0;
    const gen = createIdGenerator({ now: () => times[i++] ?? 6 });
    const ids = times.map(() => gen('evt_'));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('increments the random part within a millisecond', () => {
    const gen = createIdGenerator({ now: () => 0, randomBytes: (n) => new Uint8Array(n) });
    expect(gen('trd_')).toBe('trd_' + '0'.repeat(26));
    expect(gen('trd_')).toBe('trd_' + '0'.repeat(25) + '1');
  });

  it('moves to the next millisecond when the random part overflows', () => {
    const gen = createIdGenerator({
      now: () => 0,
      randomBytes: (n) => new Uint8Array(n).fill(255),
    });
    expect(gen('tok_')).toBe('tok_' + '0'.repeat(10) + 'z'.repeat(16));
    expect(idTime(gen('tok_'))).toBe(1);
  });

  it('writes the 80 random bits big-endian in base 32, carrying between their halves', () => {
    // Reference: the bytes as one 80-bit number, in Crockford base 32.
    const base32 = (v: bigint): string => {
      let out = '';
      for (let i = 0; i < 16; i++, v >>= 5n)
        out = '0123456789abcdefghjkmnpqrstvwxyz'[Number(v & 31n)] + out;
      return out;
    };
    const bytes = [1, 35, 69, 103, 137, 255, 255, 255, 255, 200];
    const gen = createIdGenerator({ now: () => 0, randomBytes: () => Uint8Array.from(bytes) });
    const value = bytes.reduce((v, b) => (v << 8n) | BigInt(b), 0n);
    expect(gen('trd_').slice(14)).toBe(base32(value));
    // The low half is 2^40 − 56: within 300 ids it carries into the high half.
    for (let k = 1n; k <= 300n; k++) expect(gen('trd_').slice(14)).toBe(base32(value + k));
  });

  it('keeps nothing from a call whose clock is out of range', () => {
    const times = [5, Number.NaN, 5];
    let i = 0;
    // High random bytes first, then low ones: a kept draw would sort before the first id.
    let draws = 0;
    const gen = createIdGenerator({
      now: () => times[i++] ?? 5,
      randomBytes: (n) => new Uint8Array(n).fill(draws++ === 0 ? 200 : 0),
    });
    const first = gen('ord_');
    expect(() => gen('ord_')).toThrow(RangeError);
    expect(gen('ord_') > first).toBe(true);
  });

  it('sorts by time across milliseconds', () => {
    let t = 1000;
    const gen = createIdGenerator({ now: () => (t += 7) });
    const ids = Array.from({ length: 100 }, () => gen('lse_'));
    expect([...ids].sort()).toEqual(ids);
  });

  it('produces distinct ids in bulk', () => {
    const ids = Array.from({ length: 10_000 }, () => newId('ord_'));
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('isId', () => {
  const id = newId('ord_');

  it.each([
    ['wrong prefix', 'lse_' + id.slice(4)],
    ['too short', id.slice(0, -1)],
    ['too long', id + '0'],
    ['upper case', id.toUpperCase().replace('ORD_', 'ord_')],
    ['excluded letter', id.slice(0, -1) + 'u'],
    ['time overflow', 'ord_8' + id.slice(5)],
  ])('rejects an id with %s', (_why, bad) => {
    expect(isId('ord_', bad)).toBe(false);
  });

  it('rejects non-strings', () => {
    expect(isId('ord_', 42)).toBe(false);
    expect(isId('ord_', null)).toBe(false);
  });
});
