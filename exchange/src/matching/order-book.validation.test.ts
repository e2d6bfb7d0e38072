// Given/when/then tests of the matching engine (docs/matching.md, the exact
// rules): validation (docs/matching.md "Validation") and whole 8-GPU nodes
// (spec rule 4, D5). Every expected value is worked out by hand from the doc in
// the test. given: orders placed into a fresh book; when: one command; then:
// its result, its events and the snapshot afterwards. Builders:
// testing/given.ts.

import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import {
  EMPTY,
  T0,
  at,
  fill,
  givenOrders,
  level,
  limitBuy,
  marketBuy,
  matched,
  rested,
  sell,
  snap,
} from './testing/given.js';
import type { OrderInput } from './types.js';

describe('validation (docs/matching.md "Validation"): invalid_request', () => {
  const bad: readonly (readonly [string, OrderInput])[] = [
    ['empty id', limitBuy('', 1, 100)],
    ['spec rule 4 / D5: nodes 0', limitBuy('b1', 0, 100)],
    ['spec rule 4 / D5: nodes negative', limitBuy('b1', -1, 100)],
    ['spec rule 4 / D5: nodes not an integer', limitBuy('b1', 1.5, 100)],
    ['spec rule 4 / D5: nodes NaN', limitBuy('b1', Number.NaN, 100)],
    ['nodes above 10 000', limitBuy('b1', 10_001, 100)],
    ['spec rule 4 / D5: sell nodes 0', sell('s1', 0, 100)],
    ['durationHours 0', limitBuy('b1', 1, 1000, { durationHours: 0 })],
    ['durationHours 721', limitBuy('b1', 1, 100, { durationHours: 721 })],
    ['durationHours not an integer', limitBuy('b1', 1, 100, { durationHours: 2.5 })],
    ['sell window 721 h', sell('s1', 1, 100, { durationHours: 721 })],
    ['limit buy without limitPrice', limitBuy('b1', 1, 100, { limitPrice: undefined })],
    ['limitPrice 0', limitBuy('b1', 1, 0)],
    ['limitPrice negative', limitBuy('b1', 1, -100)],
    ['limitPrice not an integer', limitBuy('b1', 1, 100.5)],
    ['limitPrice above 100 000 000', limitBuy('b1', 1, 100_000_001)],
    ['market buy with a limitPrice', marketBuy('b1', 1, { limitPrice: 100 })],
    ['D6: market sell', { ...sell('s1', 1, 100), type: 'market', limitPrice: undefined }],
    ['D6: market sell with a price', { ...sell('s1', 1, 100), type: 'market' }],
    ['D6: sell without limitPrice', sell('s1', 1, 100, { limitPrice: undefined })],
    ['D6: sell with allowPartial', sell('s1', 1, 100, { allowPartial: true })],
    ['sell with flexibleWindowHours', sell('s1', 1, 100, { flexibleWindowHours: 2 })],
    ['sell without clusterId', sell('s1', 1, 100, { clusterId: undefined })],
    ['D27: limit buy with allOrNothing', limitBuy('b1', 1, 100, { allOrNothing: true })],
    ['D27: market buy with allOrNothing', marketBuy('b1', 1, { allOrNothing: true })],
    ['flexibleWindowHours 0', limitBuy('b1', 1, 100, { flexibleWindowHours: 0 })],
    ['flexibleWindowHours 721', limitBuy('b1', 1, 100, { flexibleWindowHours: 721 })],
    ['flexibleWindowHours not an integer', limitBuy('b1', 1, 100, { flexibleWindowHours: 1.5 })],
    ['D12: expiresAt equal to now', limitBuy('b1', 1, 100, { expiresAt: T0 })],
    ['D12: expiresAt before now', limitBuy('b1', 1, 100, { expiresAt: T0 - 1 })],
  ];

  it.each(bad)('rejects %s with invalid_request and leaves no trace', (_name, order) => {
    // given
    const book = new OrderBook();
    // when
    const r = book.place(order, T0);
    // then
    expect(r).toMatchObject({ ok: false, code: 'invalid_request', events: [] });
    expect(book.snapshot(10)).toEqual(EMPTY);
    expect(book.openOrders()).toEqual([]);
  });

  it('throws on the id of an order still open: the caller keeps ids unique', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100), 0]]);
    // when / then
    expect(() => book.place(limitBuy('b1', 2, 99), at(1))).toThrow(/already open/);
  });

  it('throws on the id of a scheduled order before changing the book', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100, { startAt: at(5) }), 0]]);
    // when / then
    expect(() => book.place(limitBuy('b1', 1, 100, { startAt: at(6) }), at(1))).toThrow(
      /already open/,
    );
    expect(book.snapshot(10)).toEqual(EMPTY);
  });

  it('accepts the upper bounds: 10 000 nodes, 720 h, limit price 100 000 000', () => {
    // given
    const book = new OrderBook();
    // when
    const r = book.place(limitBuy('b1', 10_000, 100_000_000, { durationHours: 720 }), T0);
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(T0, 'b1', 100_000_000, 10_000)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({ bids: [level(100_000_000, 80_000, 1)], bestBid: 100_000_000 }),
    );
  });
  it('accepts the id of an order that is no longer open (cancelled)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100), 0]]);
    book.cancel('b1', at(0));
    // when
    const r = book.place(limitBuy('b1', 1, 100), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(at(1), 'b1', 100, 1)],
    });
  });
});

// ---------------------------------------------------------------------------

describe('spec rule 4 / D5: whole 8-GPU nodes', () => {
  it('rule 4 / D5: the engine counts nodes; the snapshot shows GPUs = nodes × 8 per level', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 3, 100), 0],
      [limitBuy('b2', 2, 100), 0],
      [limitBuy('b3', 1, 99), 0],
      [sell('s1', 4, 120), 0],
    ]);
    // when
    const r = book.place(sell('s2', 1, 120), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(at(1), 's2', 120, 1)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(100, 40, 2), level(99, 8, 1)],
        asks: [level(120, 40, 2)],
        bestBid: 100,
        bestAsk: 120,
        spread: 20,
        midPrice: 110,
      }),
    );
  });

  it('rule 4: fills are counted in nodes and lastTrade in GPUs', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 5, 100), 0]]);
    // when
    const r = book.place(limitBuy('b1', 3, 100), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 3,
      events: [matched(at(1), 'b1', [fill('s1', 3, 100, 2)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        asks: [level(100, 16, 1)],
        bestAsk: 100,
        lastTrade: { price: 100, gpus: 24, at: at(1) },
      }),
    );
  });
});
