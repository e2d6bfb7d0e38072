// Given/when/then tests of the matching engine (docs/matching.md, the exact
// rules): wash trades: same account or same organisation never trade (D17).
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
  sell,
  snap,
} from './testing/given.js';
import { expectRejected } from './testing/then.js';

describe('D17: wash trades (same account or same organisation)', () => {
  it('D17: an own-org ask reached before the buy is filled → self_trade_prevented, nothing fills (a foreign ask was ahead)', () => {
    // given: foreign 1 @100, own-org 1 @101
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 101, orgB('acct-s2')), 0],
    ]);
    // when: a 2-node buy of org-B
    const r = book.place(limitBuy('b1', 2, 101, orgB('acct-b1')), at(1));
    // then
    expect(r).toMatchObject({ ok: false, code: 'self_trade_prevented', events: [] });
    expect(book.snapshot(10)).toEqual(
      snap({ asks: [level(100, 8, 1), level(101, 8, 1)], bestAsk: 100 }),
    );
  });

  it('D17: the same for a market buy (self_trade_prevented, not a part fill)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 101, orgB('acct-s2')), 0],
    ]);
    // when
    const r = book.place(marketBuy('b1', 2, orgB('acct-b1')), at(1));
    // then
    expect(r).toMatchObject({ ok: false, code: 'self_trade_prevented', events: [] });
    expect(book.snapshot(10)).toEqual(
      snap({ asks: [level(100, 8, 1), level(101, 8, 1)], bestAsk: 100 }),
    );
  });

  it('D17: an own-org ask after the point where the buy is filled is fine', () => {
    // given: foreign 2 @100, then own-org 1 @100
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 2, 100), 0],
      [sell('s2', 1, 100, orgB('acct-s2')), 0],
    ]);
    // when
    const r = book.place(limitBuy('b1', 2, 100, orgB('acct-b1')), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      events: [matched(at(1), 'b1', [fill('s1', 2, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        asks: [level(100, 8, 1)],
        bestAsk: 100,
        lastTrade: { price: 100, gpus: 16, at: at(1) },
      }),
    );
  });

  it('D17: an own-org ask that is not compatible (window too short) is skipped, not a self-trade', () => {
    // given: own-org 1 @90 with a 2 h window, foreign 1 @100
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 90, { ...orgB('acct-s1'), durationHours: 2 }), 0],
      [sell('s2', 1, 100), 0],
    ]);
    // when: a 4 h buy of org-B
    const r = book.place(limitBuy('b1', 1, 100, { ...orgB('acct-b1'), durationHours: 4 }), at(0));
    // then
    expect(r).toMatchObject({
      ok: true,
      state: 'filled',
      events: [matched(at(0), 'b1', [fill('s2', 1, 100, 0)], 0)],
    });
  });

  it('D17: the same account in a different organisation is also blocked', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100, { accountId: 'acct-X', orgId: 'org-1' }), 0]]);
    // when
    const r = book.place(limitBuy('b1', 1, 100, { accountId: 'acct-X', orgId: 'org-2' }), at(1));
    // then
    expect(r).toMatchObject({ ok: false, code: 'self_trade_prevented', events: [] });
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(100, 8, 1)], bestAsk: 100 }));
  });

  it('D17: an arriving sell meeting an own-org bid is rejected', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100, orgB('acct-b1')), 0]]);
    // when
    const r = book.place(sell('s1', 1, 100, orgB('acct-s1')), at(1));
    // then
    expect(r).toMatchObject({ ok: false, code: 'self_trade_prevented', events: [] });
    expect(book.snapshot(10)).toEqual(snap({ bids: [level(100, 8, 1)], bestBid: 100 }));
  });

  it('D17: the sell is checked over its whole walk first: nothing fills even with a foreign bid ahead', () => {
    // given: foreign 1 @110, own-org 1 @105
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 110), 0],
      [limitBuy('b2', 1, 105, orgB('acct-b2')), 0],
    ]);
    // when: 2 nodes of org-B at 100
    const r = book.place(sell('s1', 2, 100, orgB('acct-s1')), at(1));
    // then
    expect(r).toMatchObject({ ok: false, code: 'self_trade_prevented', events: [] });
    expect(book.snapshot(10)).toEqual(
      snap({ bids: [level(110, 8, 1), level(105, 8, 1)], bestBid: 110 }),
    );
  });

  it('D17: a sell that is used up before it reaches an own-org bid trades normally', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 110), 0],
      [limitBuy('b2', 1, 105, orgB('acct-b2')), 0],
    ]);
    // when: 1 node only
    const r = book.place(sell('s1', 1, 100, orgB('acct-s1')), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(1), 'b1', [fill('s1', 1, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(105, 8, 1)],
        bestBid: 105,
        lastTrade: { price: 100, gpus: 8, at: at(1) },
      }),
    );
  });

  it('D17: an own-org AON bid the sell could not help fill is passed over: the sell trades on', () => {
    // given: own-org AON 3 @110, foreign 1 @100
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 3, 110, orgB('acct-b1')), 0],
      [limitBuy('b2', 1, 100), 0],
    ]);
    // when: 1 node of org-B at 100
    const r = book.place(sell('s1', 1, 100, orgB('acct-s1')), at(1));
    // then: b1 keeps its place, b2 is filled
    expect(r).toMatchObject({
      ok: true,
      state: 'filled',
      events: [matched(at(1), 'b2', [fill('s1', 1, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(110, 24, 1)],
        bestBid: 110,
        lastTrade: { price: 100, gpus: 8, at: at(1) },
      }),
    );
  });

  it('D17: an own-org AON bid the sell would complete (with resting asks) rejects the sell', () => {
    // given: own-org AON 3 @110 and a foreign 2-node ask @105, one node short of it
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 3, 110, orgB('acct-b1')), 0],
      [sell('s0', 2, 105), 0],
    ]);
    // when: a 1-node org-B sell at 100, which would complete b1 were it another party's
    const r = book.place(sell('s1', 1, 100, orgB('acct-s1')), at(0));
    // then
    expectRejected(r, 'self_trade_prevented');
  });

  it('D17: the AON check counts only liquidity the buy may trade with: foreign 1 + own 1 for 2 nodes is no fill at all', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 100, orgB('acct-s2')), 0],
    ]);
    // when
    const r = book.place(limitBuy('b1', 2, 100, orgB('acct-b1')), at(1));
    // then: never a part fill of s1
    expect(r).toMatchObject({ ok: false, code: 'self_trade_prevented', events: [] });
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(100, 16, 2)], bestAsk: 100 }));
  });

  it('D17 / D13: a scheduled buy that meets its own ask at arrival is cancelled self_trade_prevented', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100, orgB('acct-s1')), 0],
      [limitBuy('b1', 1, 100, { ...orgB('acct-b1'), startAt: at(1) }), 0],
    ]);
    // when
    const events = book.advance(at(1));
    // then
    expect(events).toEqual([cancelled(at(1), 'b1', 'self_trade_prevented', 1)]);
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(100, 8, 1)], bestAsk: 100 }));
  });
  it('D17: an allowPartial buy reaching its own ask before it is filled is rejected too (no part fill)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 100, orgB('acct-s2')), 0],
    ]);
    // when
    const r = book.place(limitBuy('b1', 2, 100, { ...orgB('acct-b1'), allowPartial: true }), at(1));
    // then
    expect(r).toMatchObject({ ok: false, code: 'self_trade_prevented', events: [] });
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(100, 16, 2)], bestAsk: 100 }));
  });
});
