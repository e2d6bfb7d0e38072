// Given/when/then checks of the reference book against docs/matching.md: they
// prove the oracle of the property tests is right on the rules' own examples.

import { describe, expect, it } from 'vitest';

import type { BookEvent, OrderInput, PlaceResult } from '../types.js';
import { NaiveBook } from './naive-book.js';

const H = 3_600_000;
const T0 = Date.UTC(2025, 0, 1);

type Extra = Partial<Omit<OrderInput, 'id' | 'side'>>;

function buy(
  id: string,
  nodes: number,
  limitPrice: number | undefined,
  extra: Extra = {},
): OrderInput {
  return {
    id,
    side: 'buy',
    type: limitPrice === undefined ? 'market' : 'limit',
    accountId: 'buyer',
    orgId: 'buyers',
    nodes,
    durationHours: 2,
    ...(limitPrice === undefined ? {} : { limitPrice }),
    ...extra,
  };
}

function sell(id: string, nodes: number, limitPrice: number, extra: Extra = {}): OrderInput {
  return {
    id,
    side: 'sell',
    type: 'limit',
    accountId: 'seller',
    orgId: 'sellers',
    nodes,
    durationHours: 10,
    limitPrice,
    clusterId: `c-${id}`,
    ...extra,
  };
}

function ok(r: PlaceResult): Extract<PlaceResult, { ok: true }> {
  if (!r.ok) throw new Error(`rejected: ${r.code}`);
  return r;
}

function matched(events: readonly BookEvent[]): Extract<BookEvent, { type: 'matched' }>[] {
  return events.filter((e): e is Extract<BookEvent, { type: 'matched' }> => e.type === 'matched');
}

describe('NaiveBook (the reference book) follows docs/matching.md', () => {
  it('D1: the mid and the estimate are rounded half-even to a cent', () => {
    const book = new NaiveBook();
    ok(book.place(buy('b1', 1, 101), T0));
    ok(book.place(sell('s1', 1, 102), T0));
    // mid 101.5 → 102 (up to even)
    expect(book.snapshot(5).midPrice).toBe(102);
    ok(book.place(sell('s2', 1, 103), T0));
    // 1 @102 + 1 @103: 102.5 → 102 (down to even)
    expect(book.estimate({ nodes: 2, durationHours: 2 }, T0).estimatedPrice).toBe(102);
  });

  it('rule 2: a sell smaller than the bid queue fills the earliest in full, the next in part, later ones nothing', () => {
    const book = new NaiveBook();
    ok(book.place(buy('b1', 2, 120, { allowPartial: true }), T0));
    ok(book.place(buy('b2', 2, 120, { allowPartial: true }), T0 + 1));
    ok(book.place(buy('b3', 2, 120, { allowPartial: true }), T0 + 2));
    const r = ok(book.place(sell('s1', 3, 110), T0 + 3));
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 3,
      events: [
        {
          type: 'matched',
          at: T0 + 3,
          buyOrderId: 'b1',
          fills: [
            {
              sellOrderId: 's1',
              clusterId: 'c-s1',
              nodes: 2,
              price: 110,
              sellRemaining: 1,
              leaseStartAt: T0 + 3,
            },
          ],
          buyRemaining: 0,
        },
        {
          type: 'matched',
          at: T0 + 3,
          buyOrderId: 'b2',
          fills: [
            {
              sellOrderId: 's1',
              clusterId: 'c-s1',
              nodes: 1,
              price: 110,
              sellRemaining: 0,
              leaseStartAt: T0 + 3,
            },
          ],
          buyRemaining: 1,
        },
      ],
    });
    expect(book.snapshot(10).bids).toEqual([{ price: 120, gpus: 24, orders: 2 }]);
    expect(book.openOrders().map((o) => [o.input.id, o.remaining])).toEqual([
      ['b2', 1],
      ['b3', 2],
    ]);
    expect(book.lastTrade()).toEqual({ price: 110, gpus: 8, at: T0 + 3 });
  });

  it('a buy fills from several asks in ask priority, each at its price, and the rest of a partial buy rests', () => {
    const book = new NaiveBook();
    ok(book.place(sell('s1', 1, 100), T0));
    ok(book.place(sell('s2', 2, 90), T0));
    ok(book.place(sell('s3', 2, 100), T0));
    const r = ok(book.place(buy('b1', 6, 100, { allowPartial: true }), T0 + 1));
    expect(r.state).toBe('resting');
    expect(r.filledNodes).toBe(5);
    expect(r.events).toEqual([
      {
        type: 'matched',
        at: T0 + 1,
        buyOrderId: 'b1',
        fills: [
          {
            sellOrderId: 's2',
            clusterId: 'c-s2',
            nodes: 2,
            price: 90,
            sellRemaining: 0,
            leaseStartAt: T0 + 1,
          },
          {
            sellOrderId: 's1',
            clusterId: 'c-s1',
            nodes: 1,
            price: 100,
            sellRemaining: 0,
            leaseStartAt: T0 + 1,
          },
          {
            sellOrderId: 's3',
            clusterId: 'c-s3',
            nodes: 2,
            price: 100,
            sellRemaining: 0,
            leaseStartAt: T0 + 1,
          },
        ],
        buyRemaining: 1,
      },
      { type: 'rested', at: T0 + 1, orderId: 'b1', price: 100, nodes: 1 },
    ]);
  });

  it('D9: an all-or-nothing bid the sell cannot fill is passed over and keeps its place', () => {
    const book = new NaiveBook();
    ok(book.place(buy('aon', 3, 130), T0));
    ok(book.place(buy('part', 1, 120, { allowPartial: true }), T0 + 1));
    const r1 = ok(book.place(sell('s1', 2, 100), T0 + 2));
    expect(matched(r1.events).map((m) => m.buyOrderId)).toEqual(['part']);
    expect(r1.events.at(-1)).toEqual({
      type: 'rested',
      at: T0 + 2,
      orderId: 's1',
      price: 100,
      nodes: 1,
    });
    expect(book.snapshot(5).bids).toEqual([{ price: 130, gpus: 24, orders: 1 }]);
    // Now the resting 1 node plus 2 new ones make 3: the AON bid fills from both, cheaper first.
    const r2 = ok(book.place(sell('s2', 2, 105), T0 + 3));
    expect(r2.events).toEqual([
      {
        type: 'matched',
        at: T0 + 3,
        buyOrderId: 'aon',
        fills: [
          {
            sellOrderId: 's1',
            clusterId: 'c-s1',
            nodes: 1,
            price: 100,
            sellRemaining: 0,
            leaseStartAt: T0 + 3,
          },
          {
            sellOrderId: 's2',
            clusterId: 'c-s2',
            nodes: 2,
            price: 105,
            sellRemaining: 0,
            leaseStartAt: T0 + 3,
          },
        ],
        buyRemaining: 0,
      },
    ]);
    expect(book.openOrders()).toEqual([]);
  });

  it('D9: an arriving sell sits after resting asks of its price and before dearer ones in an AON fill', () => {
    const book = new NaiveBook();
    ok(book.place(sell('cheap', 1, 100), T0));
    ok(book.place(sell('dear', 2, 110), T0));
    ok(book.place(buy('aon', 4, 120), T0 + 1)); // 3 usable < 4: rests
    const r = ok(book.place(sell('s', 1, 100), T0 + 2));
    const m = matched(r.events)[0];
    expect(m?.fills.map((f) => [f.sellOrderId, f.nodes])).toEqual([
      ['cheap', 1],
      ['s', 1],
      ['dear', 2],
    ]);
  });

  it('D17: an own-party ask met before the buy is filled rejects it whole; one met after is harmless', () => {
    const book = new NaiveBook();
    ok(book.place(sell('other', 2, 90), T0));
    ok(book.place(sell('own', 2, 100, { accountId: 'x', orgId: 'buyers' }), T0));
    const rej = book.place(buy('b3', 3, 110), T0 + 1);
    expect(rej).toMatchObject({ ok: false, code: 'self_trade_prevented', events: [] });
    expect(book.openOrders()).toHaveLength(2);
    const r = ok(book.place(buy('b2', 2, 110), T0 + 2));
    expect(r.state).toBe('filled');
    // sell side: a compatible own-party bid in the walk rejects the sell
    const book2 = new NaiveBook();
    ok(book2.place(buy('bid', 1, 120, { accountId: 'p', orgId: 'q' }), T0));
    expect(book2.place(sell('s', 1, 100, { accountId: 'p2', orgId: 'q' }), T0 + 1)).toMatchObject({
      ok: false,
      code: 'self_trade_prevented',
    });
    // an incompatible own-party bid (price below the ask) is skipped
    ok(book2.place(sell('s2', 1, 125, { accountId: 'p', orgId: 'q2' }), T0 + 2));
  });

  it('D17: a sell meeting an own-party bid before it is used up is rejected whole, even after earlier fills', () => {
    const book = new NaiveBook();
    ok(book.place(buy('other', 1, 130, { allowPartial: true }), T0));
    ok(book.place(buy('own', 1, 120, { accountId: 'p', orgId: 'sellers' }), T0));
    expect(book.place(sell('s3', 3, 100), T0 + 1)).toMatchObject({
      ok: false,
      code: 'self_trade_prevented',
      events: [],
    });
    expect(book.openOrders().map((o) => [o.input.id, o.remaining])).toEqual([
      ['other', 1],
      ['own', 1],
    ]);
    expect(book.lastTrade()).toBeNull();
    // used up by the first bid: the walk stops before the own-party one
    const r = ok(book.place(sell('s1', 1, 100), T0 + 2));
    expect(r.state).toBe('filled');
  });

  it('D10: a market buy that cannot fill is rejected with missing_gpus and leaves no trace', () => {
    const book = new NaiveBook();
    ok(book.place(sell('s1', 1, 100), T0));
    const r = book.place(buy('m', 3, undefined), T0 + 1);
    expect(r).toMatchObject({ ok: false, code: 'insufficient_liquidity', missingGpus: 16 });
    const p = book.place(buy('mp', 3, undefined, { allowPartial: true }), T0 + 2);
    expect(p).toMatchObject({ ok: true, state: 'cancelled', filledNodes: 1 });
    if (p.ok) {
      expect(p.events.at(-1)).toEqual({
        type: 'cancelled',
        at: T0 + 2,
        orderId: 'mp',
        reason: 'insufficient_liquidity',
        nodes: 2,
      });
    }
  });

  it('D15: collar from the last trade, else the exact mid; market buys skip asks outside it', () => {
    const book = new NaiveBook();
    ok(book.place(buy('bid', 1, 101), T0));
    ok(book.place(sell('ask', 1, 102), T0));
    // r = 101.5: [50.75, 152.25]
    expect(book.place(buy('lo', 30, 50), T0)).toMatchObject({
      ok: false,
      code: 'price_out_of_collar',
    });
    ok(book.place(buy('lo2', 30, 51), T0));
    ok(book.place(sell('hi', 1, 152), T0));
    expect(book.place(sell('hi2', 1, 153), T0)).toMatchObject({
      ok: false,
      code: 'price_out_of_collar',
    });

    const b2 = new NaiveBook();
    ok(b2.place(sell('s1', 1, 100), T0));
    ok(b2.place(buy('b1', 1, 100), T0)); // last trade 100
    expect(b2.lastTrade()?.price).toBe(100);
    expect(b2.place(sell('x', 1, 151), T0)).toMatchObject({
      ok: false,
      code: 'price_out_of_collar',
    });
    ok(b2.place(sell('y', 1, 150), T0));
    expect(b2.place(buy('z', 30, 49), T0)).toMatchObject({
      ok: false,
      code: 'price_out_of_collar',
    });
    ok(b2.place(buy('w', 30, 50), T0));
    ok(b2.place(sell('far', 2, 150), T0));
    // Both asks at 150 are inside [50, 150]; a market buy of 3 takes them.
    expect(b2.place(buy('m', 3, undefined), T0)).toMatchObject({ ok: true, state: 'filled' });
    expect(b2.lastTrade()?.price).toBe(150);
    // An ask accepted under one reference can fall outside the collar of a later one.
    const b3 = new NaiveBook();
    ok(b3.place(buy('b', 1, 100), T0)); // no ask: no reference, no collar
    ok(b3.place(sell('s2', 1, 150), T0)); // mid 125: [62.5, 187.5]
    ok(b3.place(sell('s', 1, 90), T0)); // trades at 90 with b
    expect(b3.lastTrade()?.price).toBe(90); // r = 90: [45, 135]
    expect(b3.snapshot(5).asks).toEqual([{ price: 150, gpus: 8, orders: 1 }]);
    expect(b3.place(buy('m', 1, undefined), T0)).toMatchObject({
      ok: false,
      code: 'insufficient_liquidity',
      missingGpus: 8,
    });
    expect(b3.estimate({ nodes: 1, durationHours: 2 }, T0)).toMatchObject({
      totalAvailable: 0,
      bestAsk: 150,
    });
  });

  it('D16: minimum order value', () => {
    const book = new NaiveBook();
    expect(book.place(buy('b', 1, 124, { durationHours: 1 }), T0)).toMatchObject({
      ok: false,
      code: 'order_value_too_low',
    });
    ok(book.place(buy('b2', 1, 125, { durationHours: 1 }), T0)); // 8 × 1 × 125 = 1000
    expect(book.place(sell('s', 1, 124, { durationHours: 1 }), T0)).toMatchObject({
      ok: false,
      code: 'order_value_too_low',
    });
    const b2 = new NaiveBook();
    ok(b2.place(sell('s', 1, 100), T0));
    // market buy: cost of its fills, 8 × 1 × 100 = 800, checked after liquidity
    expect(b2.place(buy('m', 1, undefined, { durationHours: 1 }), T0)).toMatchObject({
      ok: false,
      code: 'order_value_too_low',
    });
    expect(b2.place(buy('m2', 2, undefined, { durationHours: 1 }), T0)).toMatchObject({
      ok: false,
      code: 'insufficient_liquidity',
    });
    expect(b2.openOrders()).toHaveLength(1);
  });

  it('D13: a scheduled order is unseen until startAt, then arrives with a new sequence', () => {
    const book = new NaiveBook();
    const r = ok(book.place(sell('later', 1, 100, { startAt: T0 + 2 * H }), T0));
    expect(r.state).toBe('scheduled');
    ok(book.place(sell('now', 1, 100), T0 + 1));
    expect(book.snapshot(5).asks).toEqual([{ price: 100, gpus: 8, orders: 1 }]);
    expect(book.openOrders().map((o) => [o.input.id, o.state])).toEqual([
      ['now', 'resting'],
      ['later', 'scheduled'],
    ]);
    const ev = book.advance(T0 + 3 * H);
    expect(ev).toEqual([
      { type: 'rested', at: T0 + 2 * H, orderId: 'later', price: 100, nodes: 1 },
    ]);
    expect(book.openOrders().map((o) => o.input.id)).toEqual(['now', 'later']);
    // a market buy of 1 takes 'now' first
    const m = ok(book.place(buy('m', 1, undefined), T0 + 3 * H));
    expect(matched(m.events)[0]?.fills[0]?.sellOrderId).toBe('now');
    // a scheduled sell's window starts at its startAt; it leaves 1 h before its end
    const later = book.openOrders()[0];
    expect(later?.expiresAt).toBe(T0 + 11 * H + 1);
  });

  it('D13: a scheduled market buy that cannot fill on arrival is cancelled, not rejected', () => {
    const book = new NaiveBook();
    ok(book.place(buy('m', 2, undefined, { startAt: T0 + H }), T0));
    expect(book.advance(T0 + H)).toEqual([
      { type: 'cancelled', at: T0 + H, orderId: 'm', reason: 'insufficient_liquidity', nodes: 2 },
    ]);
  });

  it('D14: a flexible buy without a limit rests at R when its market step cannot fill, then runs at market at the window end', () => {
    const book = new NaiveBook();
    ok(book.place(sell('a', 2, 100), T0));
    // R = 100 from 2 of the 4 nodes: the all-or-nothing market step cannot fill
    const r = ok(book.place(buy('f', 4, undefined, { flexibleWindowHours: 3 }), T0));
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      referencePrice: 100,
      events: [{ type: 'rested', at: T0, orderId: 'f', price: 100, nodes: 4 }],
    });
    ok(book.place(sell('b', 2, 120), T0));
    expect(book.snapshot(5).bestBid).toBe(100);
    const ev = book.advance(T0 + 3 * H);
    expect(ev).toEqual([
      {
        type: 'matched',
        at: T0 + 3 * H,
        buyOrderId: 'f',
        fills: [
          {
            sellOrderId: 'a',
            clusterId: 'c-a',
            nodes: 2,
            price: 100,
            sellRemaining: 0,
            leaseStartAt: T0 + 3 * H,
          },
          {
            sellOrderId: 'b',
            clusterId: 'c-b',
            nodes: 2,
            price: 120,
            sellRemaining: 0,
            leaseStartAt: T0 + 3 * H,
          },
        ],
        buyRemaining: 0,
      },
    ]);
  });

  it('D14: a 16-GPU flexible buy against 8 GPUs @ $2.00 and 8 @ $2.40 fills at creation (average $2.20 = R)', () => {
    const book = new NaiveBook();
    ok(book.place(sell('a', 1, 200), T0));
    ok(book.place(sell('b', 1, 240), T0));
    const r = ok(book.place(buy('f', 2, undefined, { flexibleWindowHours: 3 }), T0));
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      referencePrice: 220,
      events: [
        {
          type: 'matched',
          at: T0,
          buyOrderId: 'f',
          fills: [
            {
              sellOrderId: 'a',
              clusterId: 'c-a',
              nodes: 1,
              price: 200,
              sellRemaining: 0,
              leaseStartAt: T0,
            },
            {
              sellOrderId: 'b',
              clusterId: 'c-b',
              nodes: 1,
              price: 240,
              sellRemaining: 0,
              leaseStartAt: T0,
            },
          ],
          buyRemaining: 0,
        },
      ],
    });
  });

  it('D27: a resale window [windowStartAt, windowEndAt]: fits count from its start, the lease starts there', () => {
    const book = new NaiveBook();
    // a 6 h bid does not fit [0:15, 6:00]; a 5 h one does, its lease from 0:15
    ok(book.place(buy('b6', 1, 100, { durationHours: 6 }), T0));
    ok(book.place(buy('b5', 1, 100, { durationHours: 5 }), T0));
    const from = T0 + H / 4;
    const r = ok(
      book.place(
        sell('r', 1, 100, {
          allOrNothing: true,
          startAt: T0,
          windowStartAt: from,
          windowEndAt: T0 + 6 * H,
        }),
        T0,
      ),
    );
    expect(r.events).toEqual([
      {
        type: 'matched',
        at: T0,
        buyOrderId: 'b5',
        fills: [
          {
            sellOrderId: 'r',
            clusterId: 'c-r',
            nodes: 1,
            price: 100,
            sellRemaining: 0,
            leaseStartAt: from,
          },
        ],
        buyRemaining: 0,
      },
    ]);
  });

  it('D14: what an allowPartial market step on arrival leaves waits at R', () => {
    const book = new NaiveBook();
    ok(book.place(sell('a', 1, 100), T0));
    ok(book.place(sell('b', 1, 110), T0));
    // R = 105; the market step takes both (average 105), 1 node is left
    const r = ok(
      book.place(buy('f', 3, undefined, { flexibleWindowHours: 3, allowPartial: true }), T0),
    );
    expect(r).toMatchObject({ state: 'resting', filledNodes: 2, referencePrice: 105 });
    expect(r.events.map((e) => e.type)).toEqual(['matched', 'rested']);
    expect(book.snapshot(5).bids).toEqual([{ price: 105, gpus: 8, orders: 1 }]);
  });

  it('D14: with no ask at all it waits unseen and is cancelled at the window end', () => {
    const book = new NaiveBook();
    const r = ok(book.place(buy('f', 1, undefined, { flexibleWindowHours: 2 }), T0));
    expect(r.referencePrice).toBeUndefined();
    expect(book.openOrders().map((o) => [o.input.id, o.state, o.price])).toEqual([
      ['f', 'unseen', null],
    ]);
    expect(book.snapshot(5).bids).toEqual([]);
    expect(book.advance(T0 + 2 * H)).toEqual([
      {
        type: 'cancelled',
        at: T0 + 2 * H,
        orderId: 'f',
        reason: 'insufficient_liquidity',
        nodes: 1,
      },
    ]);
  });

  it('D14: R too low for the minimum value is rejected', () => {
    const book = new NaiveBook();
    ok(book.place(sell('a', 1, 100), T0));
    expect(
      book.place(buy('f', 1, undefined, { durationHours: 1, flexibleWindowHours: 2 }), T0),
    ).toMatchObject({
      ok: false,
      code: 'order_value_too_low',
    });
  });

  it('D12: expiry of limit buys after 24 h and of sells once no 1 h lease fits; expiries before arrivals', () => {
    const book = new NaiveBook();
    ok(book.place(buy('b', 1, 100), T0));
    ok(book.place(sell('s', 1, 150, { durationHours: 5 }), T0));
    expect(book.advance(T0 + 4 * H)).toEqual([]);
    expect(book.advance(T0 + 4 * H + 1)).toEqual([
      { type: 'cancelled', at: T0 + 4 * H + 1, orderId: 's', reason: 'expired', nodes: 1 },
    ]);
    expect(book.advance(T0 + 24 * H)).toEqual([
      { type: 'cancelled', at: T0 + 24 * H, orderId: 'b', reason: 'expired', nodes: 1 },
    ]);

    const b2 = new NaiveBook();
    ok(b2.place(buy('x', 1, 100, { expiresAt: T0 + 2 * H }), T0));
    ok(b2.place(sell('y', 1, 100, { startAt: T0 + 2 * H }), T0));
    // at T0+2h: x expires before y arrives, so nothing trades
    expect(b2.advance(T0 + 2 * H)).toEqual([
      { type: 'cancelled', at: T0 + 2 * H, orderId: 'x', reason: 'expired', nodes: 1 },
      { type: 'rested', at: T0 + 2 * H, orderId: 'y', price: 100, nodes: 1 },
    ]);
  });

  it('windows: a sell fits a buy only if the whole lease fits in what is left of the window', () => {
    const book = new NaiveBook();
    ok(book.place(sell('s', 1, 100, { durationHours: 3 }), T0));
    expect(book.place(buy('b', 1, 100, { durationHours: 3 }), T0 + 1)).toMatchObject({
      ok: true,
      state: 'resting',
    });
    const r = ok(book.place(buy('b2', 1, 100, { durationHours: 2 }), T0 + H));
    expect(r.state).toBe('filled');
  });

  it('validation', () => {
    const book = new NaiveBook();
    ok(book.place(buy('b', 1, 130), T0));
    const bad = (o: OrderInput): void => {
      expect(book.place(o, T0)).toMatchObject({ ok: false, code: 'invalid_request' });
    };
    bad(buy('', 1, 130));
    expect(() => book.place(buy('b', 1, 130), T0)).toThrow(/already open/);
    bad(buy('n0', 0, 130));
    bad(buy('n', 10_001, 130));
    bad(buy('d', 1, 130, { durationHours: 721 }));
    bad({ ...buy('m', 1, undefined), limitPrice: 100 });
    bad({ ...sell('ms', 1, 100), type: 'market', limitPrice: undefined });
    bad(sell('ap', 1, 100, { allowPartial: true }));
    bad(sell('fx', 1, 100, { flexibleWindowHours: 2 }));
    bad(sell('nc', 1, 100, { clusterId: undefined }));
    bad(buy('ex', 1, 130, { expiresAt: T0 }));
    bad(buy('fw', 1, 130, { flexibleWindowHours: 0 }));
    bad(buy('lp', 1, 100.5));
    bad(buy('aon', 1, 130, { allOrNothing: true }));
  });

  it('D27: a buy takes an all-or-nothing ask whole or not at all, by the plan of "Choosing the fills"', () => {
    const book = new NaiveBook();
    ok(book.place(sell('one', 1, 100), T0));
    ok(book.place(sell('whole3', 3, 101, { allOrNothing: true }), T0));
    // 2 nodes: the 3 is too large, so 1 node only: an all-or-nothing buy rests
    expect(ok(book.place(buy('b2', 2, 105), T0 + 1)).state).toBe('resting');
    // 3 nodes: taking `one` would leave 2, which nothing makes: the 3 whole
    const r = ok(book.place(buy('b3', 3, 105, { accountId: 'o', orgId: 'o' }), T0 + 2));
    expect(matched(r.events)[0]?.fills.map((f) => [f.sellOrderId, f.nodes])).toEqual([
      ['whole3', 3],
    ]);
    // b2 is left crossed with `one`, which it cannot fill from
    expect(book.openOrders().map((o) => [o.input.id, o.remaining])).toEqual([
      ['b2', 2],
      ['one', 1],
    ]);
  });

  it('D27 / D17: only an own ask the plan takes rejects the buy', () => {
    const book = new NaiveBook();
    ok(
      book.place(sell('own3', 3, 100, { accountId: 'x', orgId: 'buyers', allOrNothing: true }), T0),
    );
    ok(book.place(sell('other', 2, 101), T0));
    expect(ok(book.place(buy('b2', 2, 105), T0 + 1)).state).toBe('filled');
    ok(book.place(sell('other2', 1, 101), T0 + 2));
    expect(book.place(buy('b3', 3, 105), T0 + 3)).toMatchObject({
      ok: false,
      code: 'self_trade_prevented',
    });
  });

  it('D27: an all-or-nothing sell goes whole to the first bid that can take it, then stops', () => {
    const book = new NaiveBook();
    ok(book.place(buy('small', 2, 130, { allowPartial: true }), T0));
    ok(book.place(buy('aon4', 4, 125), T0));
    ok(book.place(buy('big', 5, 120, { allowPartial: true }), T0));
    ok(book.place(buy('last', 3, 115, { allowPartial: true }), T0));
    const r = ok(book.place(sell('w', 3, 100, { allOrNothing: true }), T0 + 1));
    expect(matched(r.events).map((m) => [m.buyOrderId, m.fills.map((f) => f.nodes)])).toEqual([
      ['big', [3]],
    ]);
    // nobody can take a 6 whole: it rests whole
    const r2 = ok(book.place(sell('w6', 6, 100, { allOrNothing: true }), T0 + 2));
    expect(r2.state).toBe('resting');
  });

  it('D27 / D9: a divisible sell completes an all-or-nothing bid with a resting all-or-nothing ask', () => {
    const book = new NaiveBook();
    ok(book.place(sell('w3', 3, 100, { allOrNothing: true }), T0));
    ok(book.place(buy('aon4', 4, 120), T0 + 1)); // 3 whole ≠ 4: rests
    const r = ok(book.place(sell('s1', 1, 110), T0 + 2));
    expect(matched(r.events)[0]?.fills.map((f) => [f.sellOrderId, f.nodes])).toEqual([
      ['w3', 3],
      ['s1', 1],
    ]);
  });

  it('D27 / estimate: fills by the plan; missing from what it reaches; larger all-or-nothing asks not available', () => {
    const book = new NaiveBook();
    ok(book.place(sell('w2', 2, 100, { allOrNothing: true }), T0));
    ok(book.place(sell('w2b', 2, 101, { allOrNothing: true }), T0));
    ok(book.place(sell('w5', 5, 102, { allOrNothing: true }), T0));
    const e = book.estimate({ nodes: 3, durationHours: 2 }, T0);
    expect(e).toMatchObject({
      fills: [{ price: 100, gpus: 16 }],
      totalAvailable: 32,
      sufficientLiquidity: false,
      missingGpus: 8,
    });
  });

  it('estimate: per-level fills, weighted half-even price, own asks skipped', () => {
    const book = new NaiveBook();
    ok(book.place(sell('a', 1, 100), T0));
    ok(book.place(sell('b', 1, 101), T0));
    ok(book.place(sell('c', 3, 101, { accountId: 'me', orgId: 'mine' }), T0));
    const e = book.estimate({ nodes: 3, durationHours: 2, accountId: 'me', orgId: 'mine' }, T0);
    expect(e).toEqual({
      fills: [
        { price: 100, gpus: 8 },
        { price: 101, gpus: 8 },
      ],
      estimatedPrice: 100, // 100.5 → 100
      bestAsk: 100,
      worstFillPrice: 101,
      totalAvailable: 16,
      sufficientLiquidity: false,
      missingGpus: 8,
      computeCostCents: (800 + 808) * 2,
    });
    expect(book.estimate({ nodes: 3, durationHours: 2 }, T0).estimatedPrice).toBe(101);
  });
});
