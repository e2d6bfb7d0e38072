// Prefixed, time-sortable ids: prefix + 26 characters in the ULID layout
// (10 characters of millisecond time, 16 of randomness, Crockford base32,
// lower case). Ids made in the same process sort in creation order.

import { randomBytes as nodeRandomBytes } from 'node:crypto';

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
} as const;

export type IdPrefix = (typeof ID_PREFIXES)[keyof typeof ID_PREFIXES];

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const TIME_CHARS = 10;
const RANDOM_CHARS = 16;
const RANDOM_BITS = 80n;
const MAX_TIME = 2 ** 48 - 1;
// The first time character carries only 3 of its 5 bits (48 = 10 × 5 − 2).
const BODY = /^[0-7][0-9a-hjkmnp-tv-z]{25}$/;

export interface IdGeneratorOptions {
  readonly now?: () => number;
  readonly randomBytes?: (size: number) => Uint8Array;
}

export type IdGenerator = (prefix: IdPrefix) => string;

/**
 * Within one millisecond (or if the clock steps back) the random part of the
 * previous id is incremented, so ids stay strictly increasing.
 */
export function createIdGenerator(options: IdGeneratorOptions = {}): IdGenerator {
  const now = options.now ?? Date.now;
  const randomBytes = options.randomBytes ?? nodeRandomBytes;
  let lastTime = -1;
  let lastRandom = 0n;

  return (prefix) => {
    let time = Math.max(now(), lastTime);
    let random: bigint;
    if (time === lastTime) {
      random = lastRandom + 1n;
      if (random >> RANDOM_BITS !== 0n) {
        // 2^80 ids in one millisecond: borrow the next one rather than repeat.
        time += 1;
        random = fresh(randomBytes);
      }
    } else {
      random = fresh(randomBytes);
    }
    if (!Number.isSafeInteger(time) || time < 0 || time > MAX_TIME) {
      throw new RangeError(`clock value ${time} out of range for an id`);
    }
    lastTime = time;
    lastRandom = random;
    return prefix + encode(BigInt(time), TIME_CHARS) + encode(random, RANDOM_CHARS);
  };
}

function fresh(randomBytes: (size: number) => Uint8Array): bigint {
  let value = 0n;
  for (const byte of randomBytes(10)) value = (value << 8n) | BigInt(byte);
  return value;
}

function encode(value: bigint, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) {
    out = ALPHABET.charAt(Number(value & 31n)) + out;
    value >>= 5n;
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
