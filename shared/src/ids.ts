// Prefixed, time-sortable ids: prefix + 26 characters in the ULID layout
// (10 characters of millisecond time, 16 of randomness, Crockford base32,
// lower case). Ids made in the same process sort in creation order.

import { randomFillSync } from 'node:crypto';

export const ID_PREFIXES = {
  order: 'ord_',
  lease: 'lse_',
  account: 'acc_',
  organization: 'org_',
  cluster: 'cls_',
  node: 'nod_',
  token: 'tok_',
  event: 'evt_',
  sshKey: 'key_',
  transaction: 'txn_',
  trade: 'trd_',
  audit: 'aud_',
  webhook: 'whk_',
  webhookDelivery: 'whd_',
} as const;

export type IdPrefix = (typeof ID_PREFIXES)[keyof typeof ID_PREFIXES];

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const TIME_CHARS = 10;
const MAX_TIME = 2 ** 48 - 1;
// The 80 random bits are kept as two 40-bit halves: plain numbers, exact
// (40 < 53 bits), so making an id needs no BigInt.
const HALF = 2 ** 40;
const HALF_CHARS = 8;
// The first time character carries only 3 of its 5 bits (48 = 10 × 5 − 2).
const BODY = /^[0-7][0-9a-hjkmnp-tv-z]{25}$/;

export interface IdGeneratorOptions {
  readonly now?: () => number;
  readonly randomBytes?: (size: number) => Uint8Array;
}

export type IdGenerator = (prefix: IdPrefix) => string;

/**
 * Random bytes drawn from the system's CSPRNG a page at a time: one call
 * into it per 409 ids instead of one per id.
 */
function pooledRandomBytes(): (size: number) => Uint8Array {
  const pool = new Uint8Array(4096);
  let used = pool.length;
  return (size) => {
    if (used + size > pool.length) {
      randomFillSync(pool);
      used = 0;
    }
    used += size;
    return pool.subarray(used - size, used);
  };
}

/**
 * Within one millisecond (or if the clock steps back) the random part of the
 * previous id is incremented, so ids stay strictly increasing.
 */
export function createIdGenerator(options: IdGeneratorOptions = {}): IdGenerator {
  const now = options.now ?? Date.now;
  const randomBytes = options.randomBytes ?? pooledRandomBytes();
  let lastTime = -1;
  let hi = 0;
  let lo = 0;

  /** Ten fresh random bytes as the two halves. */
  const fresh = (): [number, number] => {
    const b = randomBytes(10);
    const byte = (i: number): number => b[i] ?? 0;
    return [
      ((byte(0) * 256 + byte(1)) * 256 + byte(2)) * 65536 + byte(3) * 256 + byte(4),
      ((byte(5) * 256 + byte(6)) * 256 + byte(7)) * 65536 + byte(8) * 256 + byte(9),
    ];
  };

  return (prefix) => {
    let time = Math.max(now(), lastTime);
    let nextHi = hi;
    let nextLo = lo;
    if (time === lastTime) {
      nextLo += 1;
      if (nextLo === HALF) {
        nextLo = 0;
        nextHi += 1;
        if (nextHi === HALF) {
          // 2^80 ids in one millisecond: borrow the next one rather than repeat.
          time += 1;
          [nextHi, nextLo] = fresh();
        }
      }
    } else {
      [nextHi, nextLo] = fresh();
    }
    // Nothing is kept from a call that fails, so the next id still sorts after the last.
    if (!Number.isSafeInteger(time) || time < 0 || time > MAX_TIME) {
      throw new RangeError(`clock value ${time} out of range for an id`);
    }
    lastTime = time;
    hi = nextHi;
    lo = nextLo;
    return prefix + encode(time, TIME_CHARS) + encode(hi, HALF_CHARS) + encode(lo, HALF_CHARS);
  };
}

/** `length` base-32 characters of a whole number below 2^53. */
function encode(value: number, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) {
    out = ALPHABET.charAt(value % 32) + out;
    value = Math.floor(value / 32);
  }
  return out;
}

export const newId: IdGenerator = createIdGenerator();

export function isId(prefix: IdPrefix, s: unknown): s is string {
  return typeof s === 'string' && s.startsWith(prefix) && BODY.test(s.slice(prefix.length));
}

/** Milliseconds since the epoch at which an id was made. */
export function idTime(id: string): number {
  const body = id.slice(id.indexOf('_') + 1, id.indexOf('_') + 1 + TIME_CHARS);
  let time = 0;
  for (const ch of body) time = time * 32 + ALPHABET.indexOf(ch);
  return time;
}
