// Given/when/then tests of a halted book (issue 21, docs/api/admin.md "Books"):
// an operator halts a book, its clock goes on but none of its timers fires;
// once resumed, what fell due fires at once: an expiry at its own time (it
// trades nothing), an arrival (D13) or a flexible window's end (D14) at the
// resumption, since nothing trades in a halt. The exchange refuses new
// orders of a halted book itself (market/book-state.ts); cancels still work.

import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import {
  at,
  cancelled,
  fill,
  givenOrders,
  limitBuy,
  marketBuy,
  matched,
  place,
  rested,
  sell,
} from './testing/given.js';

describe('a halted book', () => {
  it('fires no timer while halted: a scheduled sell does not arrive, an expiry does not fire', () => {
    // given: a buy that expires at 24 h and a sell scheduled for 2 h
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 100), 0],
      [sell('s1', 1, 300, { startAt: at(2) }), 0],
    ]);
    book.setHalted(true, at(0));
    // when: 30 h pass
    const events = book.advance(at(30));
    // then: nothing happened, and the clock went on
    expect(events).toEqual([]);
    expect(book.clock).toBe(at(30));
    expect(book.openOrder('b1')).toBeDefined();
    expect(book.openOrder('s1')).toBeDefined();
  });

  it('a cancel in a halt takes effect at its own time', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100), 0]]);
    book.setHalted(true, at(1));
    // when
    const r = book.cancel('b1', at(3));
    // then
    expect(r).toEqual({ ok: true, nodes: 1, events: [cancelled(at(3), 'b1', 'user', 1)] });
  });

  it('on resumption an arrival due in the halt arrives at the resumption and trades then', () => {
    // given: a resting buy at $1.00 and a sell at $1.00 scheduled for 2 h; halted at 1 h
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 100), 0],
      [sell('s1', 1, 100, { startAt: at(2) }), 0],
    ]);
    book.setHalted(true, at(1));
    expect(book.advance(at(5))).toEqual([]);
    // when: resumed at 5 h
    const events = book.setHalted(false, at(5));
    // then: s1 arrives at 5 h, not 2 h, and trades at 5 h
    expect(events).toEqual([matched(at(5), 'b1', [fill('s1', 1, 100, 0)], 0)]);
  });

  it('on resumption an expiry due in the halt fires at its own time, before the arrivals', () => {
    // given: b1 expires at 24 h; s1 arrives at 2 h (after the halt began at 1 h)
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 100), 0],
      [sell('s1', 1, 100, { startAt: at(2) }), 0],
    ]);
    book.setHalted(true, at(1));
    // when: resumed at 30 h
    const events = book.setHalted(false, at(30));
    // then: b1 expired at 24 h (trading nothing); s1 arrives at 30 h and rests
    expect(events).toEqual([cancelled(at(24), 'b1', 'expired', 1), rested(at(30), 's1', 100, 1)]);
  });

  it('D14: a flexible buy whose window ended in the halt executes at market at the resumption', () => {
    // given: one ask of 1 node at $2.00 and a flexible 2-node market buy with a
    // 3 h window, resting (one node is not enough); a second ask at $2.10 at 1 h
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 200), 0]]);
    const r = place(book, marketBuy('b1', 2, { flexibleWindowHours: 3 }), at(0));
    expect(r.state).toBe('resting');
    givenOrders(book, [[sell('s2', 1, 210), 1]]);
    book.setHalted(true, at(2));
    expect(book.advance(at(6))).toEqual([]);
    // when: resumed at 6 h, the window having ended at 3 h
    const events = book.setHalted(false, at(6));
    // then: the market step runs at 6 h, not 3 h, and takes both asks
    expect(events).toEqual([
      matched(at(6), 'b1', [fill('s1', 1, 200, 0), fill('s2', 1, 210, 0)], 0),
    ]);
  });

  it('halting or resuming twice changes nothing the second time', () => {
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100, { startAt: at(2) }), 0]]);
    expect(book.setHalted(true, at(1))).toEqual([]);
    expect(book.setHalted(true, at(3))).toEqual([]);
    expect(book.isHalted).toBe(true);
    expect(book.setHalted(false, at(4))).toEqual([rested(at(4), 's1', 100, 1)]);
    expect(book.setHalted(false, at(5))).toEqual([]);
    expect(book.isHalted).toBe(false);
  });
});
