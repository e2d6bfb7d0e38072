// Given/when/then tests of the matching engine (docs/matching.md, the exact
// rules): openOrders() and OrderBook.restore() (docs/matching.md "Restore").
// Every expected value is worked out by hand from the doc in the test. given:
// orders placed into a fresh book; when: one command; then: its result, its
// events and the snapshot afterwards. Builders: testing/given.ts.

import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import {
  at,
  cancelled,
  fill,
  givenOrders,
  level,
  limitBuy,
  marketBuy,
  matched,
  orgB,
  place,
  rested,
  sell,
} from './testing/given.js';

describe('restore', () => {
  /**
   * A book with a last trade, a partly filled ask, resting bids of several
   * kinds, a scheduled bid and a flexible bid resting at R.
   */
  function givenRichBook(): OrderBook {
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 2, 100), 0],
      [limitBuy('b1', 1, 90), 0],
      [limitBuy('t1', 1, 100), 0], // fills 1 of s1: last trade 100
      [limitBuy('b3', 3, 95, { allowPartial: true }), 0],
      [limitBuy('b4', 1, 96, { startAt: at(2) }), 0],
      // R = 100 from s1's last node; 1 of 2 nodes: it rests at R (D14)
      [marketBuy('b5', 2, { flexibleWindowHours: 5 }), 0],
      [sell('s2', 1, 105), 0],
    ]);
    return book;
  }

  it('restore: yields the same snapshot and open orders', () => {
    // given
    const book = givenRichBook();
    // when
    const restored = OrderBook.restore(book.openOrders(), book.lastTrade(), book.clock);
    // then
    const expected = {
      bids: [level(100, 16, 1), level(95, 24, 1), level(90, 8, 1)],
      asks: [level(100, 8, 1), level(105, 8, 1)],
      bestBid: 100,
      bestAsk: 100,
      spread: 0,
      midPrice: 100,
      lastTrade: { price: 100, gpus: 8, at: at(0) },
    };
    expect(book.snapshot(10)).toEqual(expected);
    expect(restored.snapshot(10)).toEqual(expected);
    expect(restored.clock).toBe(at(0));
    expect(restored.openOrders()).toEqual(book.openOrders());
    expect(restored.lastTrade()).toEqual(book.lastTrade());
  });

  it('restore: the restored book behaves the same on the next order', () => {
    // given
    const book = givenRichBook();
    const restored = OrderBook.restore(book.openOrders(), book.lastTrade(), book.clock);
    // when: 1 node at 100: b5 (AON 2 at 100) fills from s1's last node + it
    const order = sell('s4', 1, 100);
    const r1 = book.place(order, at(1));
    const r2 = restored.place(order, at(1));
    // then
    const expected = {
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(1), 'b5', [fill('s1', 1, 100, 0), fill('s4', 1, 100, 0)], 0)],
    };
    expect(r1).toEqual(expected);
    expect(r2).toEqual(expected);
    expect(restored.snapshot(10)).toEqual(book.snapshot(10));
  });

  it('restore: timers (arrival, expiries in acceptance order) carry over', () => {
    // given
    const book = givenRichBook();
    const restored = OrderBook.restore(book.openOrders(), book.lastTrade(), book.clock);
    // when
    const e1 = book.advance(at(30));
    const e2 = restored.advance(at(30));
    // then: b4 arrives at 2 h and rests (105 > 96); b5's window ends at 5 h: market
    // step takes s1 1 @100 and s2 1 @105; then at 24 h b1, b3, b4 expire
    const expected = [
      rested(at(2), 'b4', 96, 1),
      matched(at(5), 'b5', [fill('s1', 1, 100, 0), fill('s2', 1, 105, 0)], 0),
      cancelled(at(24), 'b1', 'expired', 1),
      cancelled(at(24), 'b3', 'expired', 3),
      cancelled(at(24), 'b4', 'expired', 1),
    ];
    expect(e1).toEqual(expected);
    expect(e2).toEqual(expected);
  });
  it('restore / openOrders: lists resting orders in priority order (bids then asks) with their state, plus scheduled and unseen ones', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 100), 0],
      [limitBuy('b2', 2, 101), 0],
      [sell('s1', 1, 120, orgB('acct-s1')), 0],
      [limitBuy('b3', 1, 100, { startAt: at(2) }), 0],
      // b4's estimate skips its own org's asks: none left, so it waits unseen
      [marketBuy('b4', 1, { flexibleWindowHours: 3, ...orgB('acct-b4') }), 0],
    ]);
    givenOrders(book, [[sell('s2', 2, 110, orgB('acct-s2')), 1]]);
    // when
    const open = book.openOrders();
    // then
    const brief = open.map((o) => ({
      id: o.input.id,
      state: o.state,
      remaining: o.remaining,
      acceptedAt: o.acceptedAt,
      startAt: o.startAt,
      expiresAt: o.expiresAt,
      price: o.price,
    }));
    expect(brief.filter((o) => o.state === 'resting')).toEqual([
      {
        id: 'b2',
        state: 'resting',
        remaining: 2,
        acceptedAt: at(0),
        startAt: at(0),
        expiresAt: at(24),
        price: 101,
      },
      {
        id: 'b1',
        state: 'resting',
        remaining: 1,
        acceptedAt: at(0),
        startAt: at(0),
        expiresAt: at(24),
        price: 100,
      },
      {
        id: 's2',
        state: 'resting',
        remaining: 2,
        acceptedAt: at(1),
        startAt: at(1),
        expiresAt: at(48) + 1, // the first instant no 1 h lease fits (D12)
        price: 110,
      },
      {
        id: 's1',
        state: 'resting',
        remaining: 1,
        acceptedAt: at(0),
        startAt: at(0),
        expiresAt: at(47) + 1,
        price: 120,
      },
    ]);
    expect(
      brief.filter((o) => o.state !== 'resting').sort((a, b) => a.id.localeCompare(b.id)),
    ).toEqual([
      {
        id: 'b3',
        state: 'scheduled',
        remaining: 1,
        acceptedAt: at(0),
        startAt: at(2),
        expiresAt: at(24),
        price: 100,
      },
      {
        id: 'b4',
        state: 'unseen',
        remaining: 1,
        acceptedAt: at(0),
        startAt: at(0),
        expiresAt: at(3),
        price: null,
      },
    ]);
  });
  it('restore: acceptance order continues after the restored orders (expiry ties)', () => {
    // given: a restored book and a new 1-node bid accepted at the same instant as b1, b3, b4
    const book = givenRichBook();
    const restored = OrderBook.restore(book.openOrders(), book.lastTrade(), book.clock);
    place(restored, limitBuy('b9', 1, 90), at(0));
    // when
    const events = restored.advance(at(30));
    // then: b9 expires last among the 24 h expiries
    expect(events).toEqual([
      rested(at(2), 'b4', 96, 1),
      matched(at(5), 'b5', [fill('s1', 1, 100, 0), fill('s2', 1, 105, 0)], 0),
      cancelled(at(24), 'b1', 'expired', 1),
      cancelled(at(24), 'b3', 'expired', 3),
      cancelled(at(24), 'b4', 'expired', 1),
      cancelled(at(24), 'b9', 'expired', 1),
    ]);
  });

  it('D12: expiries still fire on time after the timers of thousands of done orders are dropped', () => {
    // given: one resting bid, then 3,000 sells each bought at once: their
    // window-end timers outlive them and make the book clean up its timers
    const book = new OrderBook();
    place(book, limitBuy('keep', 1, 90), at(0));
    for (let i = 0; i < 3000; i++) {
      place(book, sell(`s${i}`, 1, 100), at(1));
      place(book, limitBuy(`b${i}`, 1, 100), at(1));
    }
    // when: time passes past the bid's expiry and the sells' windows
    const events = book.advance(at(100));
    // then: only the live order's expiry fires, at its time
    expect(events).toEqual([cancelled(at(24), 'keep', 'expired', 1)]);
    expect(book.openOrders()).toEqual([]);
  });

  it('restore: queues each level by seq, whatever the order of the list (a scheduled order queues from its start)', () => {
    // given: 'early' accepted first but scheduled, 'late' accepted later and resting at once
    const book = new OrderBook();
    givenOrders(book, [
      [sell('early', 1, 100, { startAt: at(1) }), 0],
      [sell('late', 1, 100), 0.5],
    ]);
    book.advance(at(2));
    const open = book.openOrders();
    expect(open.map((o) => [o.input.id, o.acceptSeq, o.seq])).toEqual([
      ['late', 2, 1],
      ['early', 1, 2],
    ]);
    // when: rebuilt from the list in acceptance order (as a database might return it)
    const restored = OrderBook.restore([...open].reverse(), book.lastTrade(), book.clock);
    const r = restored.place(limitBuy('b1', 1, 100), at(2));
    // then: 'late' is still first in the queue
    expect(r).toMatchObject({ events: [matched(at(2), 'b1', [fill('late', 1, 100, 0)], 0)] });
    expect(restored.openOrders()).toEqual(book.openOrders().filter((o) => o.input.id === 'early'));
  });

  it('restore: refuses a resting order without seq (its place in the queue would be a guess)', () => {
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100), 0]]);
    const [open] = book.openOrders();
    if (open === undefined) throw new Error('no open order');
    expect(() => OrderBook.restore([{ ...open, seq: null }], null, book.clock)).toThrow(/seq/);
  });

  it('restore: acceptance and entry numbers never go back, whatever counters say', () => {
    // given: two resting orders, restored with counters too low
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 100), 0],
      [limitBuy('b2', 1, 100), 0],
    ]);
    const restored = OrderBook.restore(book.openOrders(), null, book.clock, {
      accepted: 0,
      entered: 0,
    });
    // when
    place(restored, limitBuy('b3', 1, 100), at(0));
    // then: b3 comes after both, in acceptance and in the queue
    expect(restored.openOrders().map((o) => [o.input.id, o.acceptSeq, o.seq])).toEqual([
      ['b1', 1, 1],
      ['b2', 2, 2],
      ['b3', 3, 3],
    ]);
  });
});
