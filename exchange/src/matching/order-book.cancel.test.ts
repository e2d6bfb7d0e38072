// Given/when/then tests of the matching engine (docs/matching.md, the exact
// rules): cancel (docs/matching.md "Cancel"). Every expected value is worked
// out by hand from the doc in the test. given: orders placed into a fresh book;
// when: one command; then: its result, its events and the snapshot afterwards.
// Builders: testing/given.ts.

import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import {
  EMPTY,
  T0,
  at,
  cancelled,
  givenOrders,
  limitBuy,
  marketBuy,
  sell,
  snap,
} from './testing/given.js';

describe('cancel', () => {
  it('cancel: a resting order is removed and its nodes reported (reason user)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 3, 100), 0]]);
    // when
    const r = book.cancel('b1', at(1));
    // then
    expect(r).toEqual({ ok: true, nodes: 3, events: [cancelled(at(1), 'b1', 'user', 3)] });
    expect(book.snapshot(10)).toEqual(EMPTY);
  });

  it('cancel: a resting sell', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 2, 100), 0]]);
    // when
    const r = book.cancel('s1', at(1));
    // then
    expect(r).toEqual({ ok: true, nodes: 2, events: [cancelled(at(1), 's1', 'user', 2)] });
    expect(book.snapshot(10)).toEqual(EMPTY);
  });

  it('cancel: a scheduled order is removed and never arrives', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100, { startAt: at(2) }), 0]]);
    // when
    const r = book.cancel('b1', at(1));
    // then
    expect(r).toEqual({ ok: true, nodes: 1, events: [cancelled(at(1), 'b1', 'user', 1)] });
    expect(book.advance(at(3))).toEqual([]);
    expect(book.snapshot(10)).toEqual(EMPTY);
  });

  it('cancel: an unknown order is not_found', () => {
    // given
    const book = new OrderBook();
    // when
    const r = book.cancel('nope', T0);
    // then
    expect(r).toEqual({ ok: false, code: 'not_found', events: [] });
  });

  it('cancel: an already cancelled order is not_found', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100), 0]]);
    book.cancel('b1', at(1));
    // when
    const r = book.cancel('b1', at(2));
    // then
    expect(r).toEqual({ ok: false, code: 'not_found', events: [] });
  });

  it('cancel: a filled order is not_found', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [limitBuy('b1', 1, 100), 0],
    ]);
    // when
    const r = book.cancel('b1', at(1));
    // then
    expect(r).toEqual({ ok: false, code: 'not_found', events: [] });
  });

  it('cancel: a partially filled allowPartial buy cancels only the rest', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 3, 100, { allowPartial: true }), 0],
      [sell('s1', 1, 100), 1],
    ]);
    // when
    const r = book.cancel('b1', at(2));
    // then
    expect(r).toEqual({ ok: true, nodes: 2, events: [cancelled(at(2), 'b1', 'user', 2)] });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 100, gpus: 8, at: at(1) } }));
  });

  it('cancel: a partially filled sell cancels only the rest', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 3, 100), 0],
      [limitBuy('b1', 1, 100), 1],
    ]);
    // when
    const r = book.cancel('s1', at(2));
    // then
    expect(r).toEqual({ ok: true, nodes: 2, events: [cancelled(at(2), 's1', 'user', 2)] });
  });

  it('cancel / Time: timers fire first; an order that already expired is not_found', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100), 0]]);
    // when
    const r = book.cancel('b1', at(25));
    // then
    expect(r).toEqual({
      ok: false,
      code: 'not_found',
      events: [cancelled(at(24), 'b1', 'expired', 1)],
    });
  });
  it('cancel: an unseen flexible buy (no ask at acceptance) can be cancelled', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[marketBuy('b1', 2, { flexibleWindowHours: 5 }), 0]]);
    // when
    const r = book.cancel('b1', at(1));
    // then
    expect(r).toEqual({ ok: true, nodes: 2, events: [cancelled(at(1), 'b1', 'user', 2)] });
    expect(book.openOrders()).toEqual([]);
    expect(book.advance(at(6))).toEqual([]);
  });
});
