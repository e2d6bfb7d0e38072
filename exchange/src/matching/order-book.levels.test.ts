// The engine's record of changed price levels, which the live feed reads
// (OrderBook.trackLevels, feed/book-feed.ts): after any command, every level
// whose GPUs or orders differ from before the command is among the prices
// recorded, and levelAt() reads each level as snapshot() shows it. Checked
// on random command sequences (testing/command-generator.ts) and by hand.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import { commandsArb } from './testing/command-generator.js';
import { T0, givenOrders, level, limitBuy, sell } from './testing/given.js';
import type { Level } from './types.js';

const RUNS = Number(process.env['GPUX_PROP_RUNS'] ?? 200);

type Levels = Map<string, Level>;

function levelsOf(book: OrderBook): Levels {
  const s = book.snapshot(Infinity);
  const out: Levels = new Map();
  for (const l of s.bids) out.set(`bid ${l.price}`, l);
  for (const l of s.asks) out.set(`ask ${l.price}`, l);
  return out;
}

describe('changed levels', () => {
  it('untracked, nothing is recorded', () => {
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100), 0]]);
    expect(book.takeChangedLevels()).toEqual({ bids: [], asks: [] });
  });

  it('records the price of every level an order joins, leaves or is filled from', () => {
    const book = new OrderBook();
    book.trackLevels();
    givenOrders(book, [
      [sell('s1', 2, 101), 0],
      [limitBuy('b1', 1, 99), 0],
    ]);
    expect(book.takeChangedLevels()).toEqual({ bids: [99], asks: [101] });
    expect(book.place(limitBuy('b2', 1, 101), T0).ok).toBe(true);
    expect(book.takeChangedLevels()).toEqual({ bids: [], asks: [101] });
    expect(book.levelAt(false, 101)).toEqual(level(101, 8, 1));
    expect(book.cancel('b1', T0).ok).toBe(true);
    expect(book.takeChangedLevels()).toEqual({ bids: [99], asks: [] });
    expect(book.levelAt(true, 99)).toBeUndefined();
  });

  it('on random commands, no changed level goes unrecorded, and levelAt agrees with snapshot', () => {
    fc.assert(
      fc.property(commandsArb(), (commands) => {
        const book = new OrderBook();
        book.trackLevels();
        let before = levelsOf(book);
        for (const c of commands) {
          if (c.kind === 'place') book.place(c.input, c.now);
          else if (c.kind === 'cancel') book.cancel(c.orderId, c.now);
          else if (c.kind === 'advance') book.advance(c.now);
          else continue;
          const after = levelsOf(book);
          const changed = book.takeChangedLevels();
          const recorded = new Set([
            ...changed.bids.map((p) => `bid ${p}`),
            ...changed.asks.map((p) => `ask ${p}`),
          ]);
          for (const key of new Set([...before.keys(), ...after.keys()])) {
            const [was, now] = [before.get(key), after.get(key)];
            if (was?.gpus !== now?.gpus || was?.orders !== now?.orders) {
              expect(recorded.has(key), `${key} changed unrecorded`).toBe(true);
            }
          }
          for (const [key, l] of after) {
            expect(book.levelAt(key.startsWith('bid'), l.price)).toEqual(l);
          }
          before = after;
        }
      }),
      { numRuns: RUNS },
    );
  });
});
