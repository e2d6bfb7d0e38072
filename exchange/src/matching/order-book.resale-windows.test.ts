// Given/when/then tests of the matching engine (docs/matching.md, the exact
// rules): sell windows given by windowStartAt / windowEndAt, as a resale has
// them (D27: [available_from, lease end]); the lease a fill makes starts at
// max(match, window start). Every expected value is worked out by hand from
// the doc in the test. given: orders placed into a fresh book; when: one
// command; then: its result, its events and the snapshot afterwards.
// Builders: testing/given.ts.

import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import {
  HOUR,
  T0,
  aonSell,
  at,
  cancelled,
  fill,
  givenOrders,
  level,
  limitBuy,
  matched,
  place,
  rested,
  sell,
  snap,
} from './testing/given.js';
import { expectRejected } from './testing/then.js';
import type { OrderInput } from './types.js';

const MIN = 60_000;

/**
 * A resale as the exchange places it (D27): all-or-nothing, resting from
 * `now`, its window from `from` to the lease end `end`.
 */
const resale = (
  id: string,
  nodes: number,
  price: number,
  now: number,
  from: number,
  end: number,
  extra: Partial<OrderInput> = {},
): OrderInput =>
  aonSell(id, nodes, price, { startAt: now, windowStartAt: from, windowEndAt: end, ...extra });

describe('D27: a resale window [windowStartAt, windowEndAt]; the lease starts at max(match, window start)', () => {
  it('D27: a 6 h lease resold from now + 15 min rests at once and takes a 2 h bid arriving at now + 30 min', () => {
    // given: the resale of a lease ending at 6 h, available from 0:15
    const book = new OrderBook();
    const r0 = place(book, resale('r1', 2, 100, at(0), at(0) + 15 * MIN, at(6)), at(0));
    expect(r0.events).toEqual([rested(at(0), 'r1', 100, 2)]);
    // when: at 0:30, a 2 h bid for 2 nodes
    const r = book.place(limitBuy('b1', 2, 100, { durationHours: 2 }), at(0) + 30 * MIN);
    // then: 2 h ≤ 6 h − 0:30; the lease starts at the match
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      events: [matched(at(0) + 30 * MIN, 'b1', [fill('r1', 2, 100, 0)], 0)],
    });
  });

  it('D27: a bid matched before the window starts gets a lease from windowStartAt', () => {
    // given: a resting 2 h bid
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 2, 100, { durationHours: 2 }), 0]]);
    // when: the resale arrives at 0, available from 0:15
    const r = book.place(resale('r1', 2, 100, at(0), at(0) + 15 * MIN, at(6)), at(0));
    // then: it matches now; the lease runs from 0:15 (D27's transfer_time)
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      events: [matched(at(0), 'b1', [fill('r1', 2, 100, 0, 'cl-r1', at(0) + 15 * MIN)], 0)],
    });
  });

  it('D27: a buy fits when d h ≤ windowEndAt − max(t, windowStartAt): a 5 h buy fits until exactly 1 h, not after', () => {
    // given: window [0:15, 6:00] (5 h 45 min)
    const fresh = (): OrderBook => {
      const book = new OrderBook();
      place(book, resale('r1', 1, 100, at(0), at(0) + 15 * MIN, at(6)), at(0));
      return book;
    };
    const book1 = fresh();
    const book2 = fresh();
    const book3 = fresh();
    // when / then: at 0 a 5 h buy fits from 0:15 (5 h ≤ 5 h 45), a 6 h one does not
    expect(book1.place(limitBuy('b6', 1, 100, { durationHours: 6 }), at(0))).toMatchObject({
      state: 'resting',
    });
    expect(book1.place(limitBuy('b5', 1, 100, { durationHours: 5 }), at(0))).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(0), 'b5', [fill('r1', 1, 100, 0, 'cl-r1', at(0) + 15 * MIN)], 0)],
    });
    // at 1:00, 5 h ≤ 6:00 − 1:00 exactly
    expect(book2.place(limitBuy('b5', 1, 100, { durationHours: 5 }), at(1))).toMatchObject({
      state: 'filled',
    });
    // 1 ms later it no longer fits
    expect(book3.place(limitBuy('b5', 1, 100, { durationHours: 5 }), at(1) + 1)).toMatchObject({
      state: 'resting',
    });
  });

  it('D27 / D11: one step from a provider ask and a resale: each fill names when its lease starts', () => {
    // given: a 1-node provider ask and a 1-node resale available from 0:40
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100), 0]]);
    place(book, resale('r1', 1, 101, at(0), at(0) + 40 * MIN, at(10)), at(0));
    // when: a 2-node 3 h buy at 0:10
    const r = book.place(limitBuy('b1', 2, 101, { durationHours: 3 }), at(0) + 10 * MIN);
    // then: one matching step, two leases with their own starts
    expect(r).toMatchObject({
      state: 'filled',
      events: [
        matched(
          at(0) + 10 * MIN,
          'b1',
          [fill('s1', 1, 100, 0), fill('r1', 1, 101, 0, 'cl-r1', at(0) + 40 * MIN)],
          0,
        ),
      ],
    });
  });

  it('D12 / D27: a sell with windowEndAt expires at windowEndAt − 1 h + 1 ms, or at an earlier expiresAt', () => {
    // given: window end 5:59:30 (not whole hours); another sell expiring at 3:00 by expiresAt
    const end = at(6) - 30_000;
    const book = new OrderBook();
    place(book, resale('r1', 1, 100, at(0), at(0) + 15 * MIN, end), at(0));
    place(book, resale('r2', 1, 100, at(0), at(0), end, { expiresAt: at(3) }), at(0));
    // when
    const events = book.advance(at(6));
    // then
    expect(events).toEqual([
      cancelled(at(3), 'r2', 'expired', 1),
      cancelled(end - HOUR + 1, 'r1', 'expired', 1),
    ]);
    expect(book.snapshot(10)).toEqual(snap({}));
  });

  it('D27: an arriving buy before the window is open also fits from windowStartAt (estimate, snapshot)', () => {
    // given: a resale available from 2:00 to 8:00, resting from 0
    const book = new OrderBook();
    place(book, resale('r1', 1, 100, at(0), at(2), at(8)), at(0));
    // then: visible at once; the estimate counts fits from 2:00 (6 h yes, 7 h no)
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(100, 8, 1)], bestAsk: 100 }));
    expect(book.estimate({ nodes: 1, durationHours: 6 }, at(0)).sufficientLiquidity).toBe(true);
    expect(book.estimate({ nodes: 1, durationHours: 7 }, at(0)).sufficientLiquidity).toBe(false);
    // and at 3:00, 5 h fits, 6 h no longer
    expect(book.estimate({ nodes: 1, durationHours: 5 }, at(3)).sufficientLiquidity).toBe(true);
    expect(book.estimate({ nodes: 1, durationHours: 6 }, at(3)).sufficientLiquidity).toBe(false);
  });

  it('D16 / D27: the minimum value counts the exact window length (1 node at 40: at least 3 h 7 min 30 s)', () => {
    // given: 8 GPUs × 40 cents = 320 cents an hour; $10 needs 3.125 h
    const book = new OrderBook();
    const exact = 3 * HOUR + 7 * MIN + 30_000;
    // when / then: 1 ms short is too low, exactly 3.125 h is enough
    expectRejected(
      book.place(resale('r1', 1, 40, T0, T0, T0 + exact - 1), T0),
      'order_value_too_low',
    );
    expect(book.place(resale('r2', 1, 40, T0, T0, T0 + exact), T0)).toMatchObject({
      ok: true,
      state: 'resting',
    });
  });

  it('D16 / D27: the window counts from windowStartAt, also before the order rests', () => {
    // given: a window [−1:00, 2:07:30] is 3 h 7 min 30 s long, 2 h 7 min 30 s of it usable
    const book = new OrderBook();
    const r = book.place(resale('r1', 1, 40, at(1), at(0), at(3) + 7 * MIN + 30_000), at(1));
    // then: value as for D6's window from a past startAt: accepted
    expect(r).toMatchObject({ ok: true, state: 'resting' });
  });

  it('restore: keeps windowStartAt and windowEndAt (in input); the restored book gives the same lease start', () => {
    // given
    const book = new OrderBook();
    place(book, resale('r1', 1, 100, at(0), at(0) + 15 * MIN, at(6) - 1000), at(0));
    const restored = OrderBook.restore(book.openOrders(), book.lastTrade(), book.clock);
    expect(restored.openOrders()).toEqual(book.openOrders());
    expect(restored.openOrders()[0]?.input).toMatchObject({
      windowStartAt: at(0) + 15 * MIN,
      windowEndAt: at(6) - 1000,
    });
    // when
    const order = limitBuy('b1', 1, 100, { durationHours: 5 });
    const r1 = book.place(order, at(0) + 5 * MIN);
    const r2 = restored.place(order, at(0) + 5 * MIN);
    // then: 5 h ≤ 5:59:59 − 0:15
    const expected = {
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [
        matched(at(0) + 5 * MIN, 'b1', [fill('r1', 1, 100, 0, 'cl-r1', at(0) + 15 * MIN)], 0),
      ],
    };
    expect(r1).toEqual(expected);
    expect(r2).toEqual(expected);
  });
});

describe('D27: validation of sell windows (invalid_request)', () => {
  const bad: readonly (readonly [string, OrderInput])[] = [
    ['windowStartAt on a buy', limitBuy('b1', 1, 100, { windowStartAt: T0 })],
    ['windowEndAt on a buy', limitBuy('b1', 1, 100, { windowEndAt: at(5) })],
    ['windowEndAt before windowStartAt', resale('r1', 1, 100, T0, at(3), at(2))],
    ['windowEndAt equal to windowStartAt', resale('r1', 1, 100, T0, at(3), at(3))],
    [
      'windowEndAt at the given startAt (default window start)',
      sell('s1', 1, 100, { windowEndAt: T0 }),
    ],
    ['under 1 h from windowStartAt ahead', resale('r1', 1, 100, T0, at(2), at(3) - 1)],
    ['under 1 h from now (window started earlier)', resale('r1', 1, 100, T0, at(-2), at(1) - 1)],
    ['under 1 h from a later startAt', resale('r1', 1, 100, at(2), at(1), at(3) - 1)],
    ['a window over 720 h', resale('r1', 1, 100, T0, T0, at(720) + 1)],
    ['windowStartAt more than 720 h ahead', resale('r1', 1, 100, T0, at(720) + 1, at(722))],
    ['windowStartAt not an integer', resale('r1', 1, 100, T0, T0 + 0.5, at(3))],
    ['windowEndAt not a number', resale('r1', 1, 100, T0, T0, Number.NaN)],
  ];

  it.each(bad)('rejects %s with invalid_request and leaves no trace', (_name, order) => {
    // given
    const book = new OrderBook();
    // when
    const r = book.place(order, T0);
    // then
    expect(r).toMatchObject({ ok: false, code: 'invalid_request', events: [] });
    expect(book.openOrders()).toEqual([]);
  });

  it('accepts exactly 1 h from windowStartAt ahead, and a window of exactly 720 h', () => {
    const book = new OrderBook();
    expect(book.place(resale('r1', 1, 200, T0, at(2), at(3)), T0)).toMatchObject({
      ok: true,
      state: 'resting',
    });
    expect(book.place(resale('r2', 1, 200, T0, T0, at(720)), T0)).toMatchObject({
      ok: true,
      state: 'resting',
    });
  });
});
