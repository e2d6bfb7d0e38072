// The reference book for the property tests: docs/matching.md read literally,
// written in the simplest way (plain arrays, re-sorted and scanned on every
// operation). It is slow on purpose and must stay obviously correct; it is
// written separately from the fast engine (order-book.ts) and shares only the
// types with it (and the project's exact rounding, D1). One file of ~750
// lines on purpose: it is the spec read in one place, to be checked against
// docs/matching.md line by line.

import { mulDivHalfEven } from '@gpux/shared';

import type {
  Book,
  BookEvent,
  EngineCancelReason,
  BookSnapshot,
  CancelResult,
  Cents,
  Estimate,
  EstimateQuery,
  Fill,
  LastTrade,
  Level,
  Millis,
  OpenOrder,
  OrderInput,
  PlaceResult,
  RejectCode,
} from '../types.js';

const HOUR: Millis = 3_600_000;
const MAX_NODES = 10_000;
const MAX_HOURS = 720;
const MAX_PRICE = 100_000_000;
const MIN_VALUE = 1000;

/** One open order of the naive book. */
interface Rec {
  readonly input: OrderInput;
  readonly id: string;
  readonly side: 'buy' | 'sell';
  readonly market: boolean;
  /** Buy with flexibleWindowHours and no limit price (D14). */
  readonly flexMarket: boolean;
  readonly allowPartial: boolean;
  /** A sell that trades only whole (D27). */
  readonly allOrNothing: boolean;
  readonly accountId: string;
  readonly orgId: string;
  readonly durationHours: number;
  readonly clusterId: string;
  readonly acceptedAt: Millis;
  readonly acceptSeq: number;
  readonly startAt: Millis;
  readonly expiresAt: Millis;
  /** Sells: windowStartAt, else the startAt given, else acceptance (D6, D27). */
  readonly windowStart: Millis;
  /** Sells: windowEndAt, else startAt + durationHours h. */
  readonly windowEnd: Millis;
  /** Limit price, or R for a flexible buy without one; null otherwise. */
  readonly price: Cents | null;
  remaining: number;
  state: 'resting' | 'scheduled' | 'unseen';
  /** Priority sequence, given when the order arrives (enters the visible book). */
  seq: number;
}

function isInt(v: unknown, lo: number, hi: number): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi;
}

function sameParty(
  a: { accountId: string; orgId: string },
  b: { accountId: string; orgId: string },
): boolean {
  return a.accountId === b.accountId || a.orgId === b.orgId;
}

/** 0.5·r ≤ p ≤ 1.5·r, with r2 = 2·r (an integer even when r is a half cent). */
function inCollar(p: Cents, r2: number | null): boolean {
  if (r2 === null) return true;
  return r2 <= 4 * p && 4 * p <= 3 * r2;
}

/** Does sell `s` fit a buy of `hours` at time t (D6, D27)? */
function fits(s: Rec, hours: number, t: Millis): boolean {
  return hours * HOUR <= s.windowEnd - Math.max(t, s.windowStart);
}

/** The fill of `n` nodes from sell `a` at time t; its lease starts at max(t, window start) (D27). */
function fillOf(a: Rec, n: number, t: Millis): Fill {
  return {
    sellOrderId: a.id,
    clusterId: a.clusterId,
    nodes: n,
    price: a.price as number,
    sellRemaining: a.remaining,
    leaseStartAt: Math.max(t, a.windowStart),
  };
}

function bidOrder(a: Rec, b: Rec): number {
  return (b.price as number) - (a.price as number) || a.seq - b.seq;
}

function askOrder(a: Rec, b: Rec): number {
  return (a.price as number) - (b.price as number) || a.seq - b.seq;
}

type Reject = { readonly reject: RejectCode; readonly missingGpus?: number };

/** An ask a buy may take, with the nodes it can give (all of them or none when `whole`). */
interface Cand {
  readonly a: Rec;
  readonly avail: number;
  readonly whole: boolean;
}

/**
 * reach[i][x]: can a selection of cands[i..] reach exactly x nodes, x ≤ cap?
 * (docs/matching.md, "Choosing the fills")
 */
function reachTable(cands: readonly Cand[], cap: number): boolean[][] {
  const reach: boolean[][] = [];
  reach[cands.length] = Array.from({ length: cap + 1 }, (_, x) => x === 0);
  for (let i = cands.length - 1; i >= 0; i--) {
    const next = reach[i + 1] as boolean[];
    const { avail, whole } = cands[i] as Cand;
    const row: boolean[] = [];
    // divisible: x = y + any 0…avail, y reachable after; track the last reachable y ≤ x
    let lastY = -Infinity;
    for (let x = 0; x <= cap; x++) {
      if (next[x] === true) lastY = x;
      row.push(
        whole ? next[x] === true || (x >= avail && next[x - avail] === true) : x - lastY <= avail,
      );
    }
    reach[i] = row;
  }
  return reach;
}

/** The most a selection of `cands` reaches, at most cap. */
function most(reach: boolean[][], cap: number): number {
  const row = reach[0] as boolean[];
  for (let x = cap; x > 0; x--) if (row[x] === true) return x;
  return 0;
}

/**
 * The plan for a reachable x: in priority, from each candidate the most that
 * leaves a rest the candidates after it can reach.
 */
function planFor(cands: readonly Cand[], reach: boolean[][], x: number): { a: Rec; n: number }[] {
  const plan: { a: Rec; n: number }[] = [];
  let left = x;
  cands.forEach((c, i) => {
    const after = reach[i + 1] as boolean[];
    for (let n = Math.min(c.avail, left); n > 0; n--) {
      if (c.whole && n !== c.avail) break;
      if (after[left - n] === true) {
        plan.push({ a: c.a, n });
        left -= n;
        return;
      }
    }
  });
  if (left !== 0) throw new Error(`naive: plan for ${x} does not reach it`);
  return plan;
}

function reject(
  code: RejectCode,
  message: string,
  events: BookEvent[],
  missingGpus?: number,
): PlaceResult {
  if (missingGpus === undefined) return { ok: false, code, message, events };
  return { ok: false, code, message, missingGpus, events };
}

export class NaiveBook implements Book {
  private orders: Rec[] = [];
  private last: LastTrade | null = null;
  private nextAcceptSeq = 1;
  private nextSeq = 1;
  private now: Millis = 0;

  get clock(): Millis {
    return this.now;
  }

  // ---------------------------------------------------------------- views

  private bids(): Rec[] {
    return this.orders.filter((o) => o.side === 'buy' && o.state === 'resting').sort(bidOrder);
  }

  private asks(): Rec[] {
    return this.orders.filter((o) => o.side === 'sell' && o.state === 'resting').sort(askOrder);
  }

  /** 2 × the reference price (D15), or null when there is none. */
  private reference2(): number | null {
    if (this.last !== null) return 2 * this.last.price;
    const bid = this.bids()[0];
    const ask = this.asks()[0];
    if (bid === undefined || ask === undefined) return null;
    return (bid.price as number) + (ask.price as number);
  }

  lastTrade(): LastTrade | null {
    return this.last;
  }

  snapshot(depth: number): BookSnapshot {
    const levels = (side: Rec[]): Level[] => {
      const out: { price: Cents; gpus: number; orders: number }[] = [];
      for (const o of side) {
        const top = out[out.length - 1];
        if (top !== undefined && top.price === o.price) {
          top.gpus += o.remaining * 8;
          top.orders += 1;
        } else {
          out.push({ price: o.price as number, gpus: o.remaining * 8, orders: 1 });
        }
      }
      return out.slice(0, Math.max(0, depth));
    };
    const bids = this.bids();
    const asks = this.asks();
    const bestBid = bids[0]?.price ?? null;
    const bestAsk = asks[0]?.price ?? null;
    const both = bestBid !== null && bestAsk !== null;
    return {
      bids: levels(bids),
      asks: levels(asks),
      bestBid,
      bestAsk,
      spread: both ? bestAsk - bestBid : null,
      midPrice: both ? mulDivHalfEven([bestBid + bestAsk], 2) : null,
      lastTrade: this.last,
    };
  }

  estimate(query: EstimateQuery, now: Millis): Estimate {
    const r2 = this.reference2();
    const own = (a: Rec): boolean =>
      (query.accountId !== undefined && a.accountId === query.accountId) ||
      (query.orgId !== undefined && a.orgId === query.orgId);
    const usable = this.asks().filter(
      (a) => inCollar(a.price as number, r2) && fits(a, query.durationHours, now) && !own(a),
    );
    const wanted = query.nodes * 8;
    // The plan of a market buy of query.nodes.
    const cands = usable.map((a) => ({ a, avail: a.remaining, whole: a.allOrNothing }));
    const reach = reachTable(cands, query.nodes);
    const fills: { price: Cents; gpus: number }[] = [];
    for (const { a, n } of planFor(cands, reach, most(reach, query.nodes))) {
      const top = fills[fills.length - 1];
      if (top !== undefined && top.price === a.price) top.gpus += n * 8;
      else fills.push({ price: a.price as number, gpus: n * 8 });
    }
    const gpus = fills.reduce((s, f) => s + f.gpus, 0);
    const value = fills.reduce((s, f) => s + f.price * f.gpus, 0);
    // an all-or-nothing ask larger than the query is not available to it
    const totalAvailable = usable
      .filter((a) => !a.allOrNothing || a.remaining <= query.nodes)
      .reduce((s, a) => s + a.remaining * 8, 0);
    const last = fills[fills.length - 1];
    return {
      fills,
      estimatedPrice: gpus > 0 ? mulDivHalfEven([value], gpus) : null,
      bestAsk: this.asks()[0]?.price ?? null,
      worstFillPrice: last?.price ?? null,
      totalAvailable,
      sufficientLiquidity: gpus === wanted,
      missingGpus: wanted - gpus,
      computeCostCents: value * query.durationHours,
    };
  }

  openOrders(): OpenOrder[] {
    const others = this.orders
      .filter((o) => o.state !== 'resting')
      .sort((a, b) => a.acceptSeq - b.acceptSeq);
    return [...this.bids(), ...this.asks(), ...others].map((o) => ({
      input: o.input,
      state: o.state,
      remaining: o.remaining,
      acceptedAt: o.acceptedAt,
      acceptSeq: o.acceptSeq,
      seq: o.state === 'resting' ? o.seq : null,
      startAt: o.startAt,
      expiresAt: o.expiresAt,
      price: o.price,
    }));
  }

  // ---------------------------------------------------------------- time

  /** Advance the clock to `now`, firing due timers in (time, expiry before arrival, acceptance) order. */
  private tick(now: Millis): BookEvent[] {
    const target = Math.max(this.now, now);
    const events: BookEvent[] = [];
    for (;;) {
      let best: { t: Millis; kind: number; rec: Rec } | null = null;
      for (const o of this.orders) {
        const cands: { t: Millis; kind: number }[] = [];
        if (o.expiresAt <= target) cands.push({ t: o.expiresAt, kind: 0 });
        if (o.state === 'scheduled' && o.startAt <= target) cands.push({ t: o.startAt, kind: 1 });
        for (const c of cands) {
          if (
            best === null ||
            c.t < best.t ||
            (c.t === best.t &&
              (c.kind < best.kind || (c.kind === best.kind && o.acceptSeq < best.rec.acceptSeq)))
          ) {
            best = { t: c.t, kind: c.kind, rec: o };
          }
        }
      }
      if (best === null) break;
      const { t, kind, rec } = best;
      if (t > this.now) this.now = t;
      if (kind === 0) events.push(...this.expire(rec, t));
      else {
        const r = this.arrive(rec, t, false);
        events.push(...r.events);
      }
    }
    this.now = target;
    return events;
  }

  private remove(rec: Rec): void {
    this.orders = this.orders.filter((o) => o !== rec);
  }

  private expire(rec: Rec, t: Millis): BookEvent[] {
    this.remove(rec);
    if (!rec.flexMarket) {
      return [
        { type: 'cancelled', at: t, orderId: rec.id, reason: 'expired', nodes: rec.remaining },
      ];
    }
    // D14: the remainder leaves the book and executes as a market buy.
    // D16 on its fills only when it had no R to check at acceptance.
    const r = this.buyWalk(rec, t, 'market', rec.price === null);
    if ('reject' in r) {
      const reason = r.reject as EngineCancelReason;
      return [{ type: 'cancelled', at: t, orderId: rec.id, reason, nodes: rec.remaining }];
    }
    return r.events;
  }

  // ---------------------------------------------------------------- commands

  advance(now: Millis): readonly BookEvent[] {
    return this.tick(now);
  }

  cancel(orderId: string, now: Millis): CancelResult {
    const events = this.tick(now);
    const rec = this.orders.find((o) => o.id === orderId);
    if (rec === undefined) return { ok: false, code: 'not_found', events };
    this.remove(rec);
    events.push({ type: 'cancelled', at: this.now, orderId, reason: 'user', nodes: rec.remaining });
    return { ok: true, nodes: rec.remaining, events };
  }

  place(input: OrderInput, nowArg: Millis): PlaceResult {
    const events = this.tick(nowArg);
    const now = this.now;
    const bad = (why: string): PlaceResult => reject('invalid_request', why, events);

    // 1. invalid_request
    if (typeof input.id !== 'string' || input.id === '') return bad('empty id');
    if (this.orders.some((o) => o.id === input.id))
      throw new Error(`order id ${input.id} is already open`);
    if (!isInt(input.nodes, 1, MAX_NODES)) return bad('nodes');
    if (!isInt(input.durationHours, 1, MAX_HOURS)) return bad('durationHours');
    if (input.type === 'limit' && !isInt(input.limitPrice, 1, MAX_PRICE)) return bad('limitPrice');
    if (input.type === 'market' && input.limitPrice !== undefined)
      return bad('market with limitPrice');
    if (input.side === 'sell' && input.type === 'market') return bad('market sell');
    if (input.side === 'sell' && input.allowPartial === true) return bad('allowPartial on a sell');
    if (input.side === 'buy' && input.allOrNothing === true) return bad('allOrNothing on a buy');
    if (input.side === 'sell' && input.flexibleWindowHours !== undefined)
      return bad('flexible sell');
    if (
      input.flexibleWindowHours !== undefined &&
      !isInt(input.flexibleWindowHours, 1, MAX_HOURS)
    ) {
      return bad('flexibleWindowHours');
    }
    if (input.side === 'sell' && (input.clusterId === undefined || input.clusterId === ''))
      return bad('clusterId');
    if (input.startAt !== undefined && input.startAt > now + MAX_HOURS * HOUR)
      return bad('startAt too far ahead');
    if (
      input.expiresAt !== undefined &&
      input.side === 'buy' &&
      (input.type === 'market' || input.flexibleWindowHours !== undefined)
    )
      return bad('expiresAt on a market or flexible buy');
    if (input.expiresAt !== undefined && !(input.expiresAt > now)) return bad('expiresAt');
    const { windowStartAt, windowEndAt } = input;
    if (input.side === 'buy' && (windowStartAt !== undefined || windowEndAt !== undefined))
      return bad('window on a buy');
    if (windowStartAt !== undefined && !Number.isSafeInteger(windowStartAt))
      return bad('windowStartAt');
    if (windowEndAt !== undefined && !Number.isSafeInteger(windowEndAt)) return bad('windowEndAt');
    if (windowStartAt !== undefined && windowStartAt > now + MAX_HOURS * HOUR)
      return bad('windowStartAt too far ahead');

    const startAt = Math.max(input.startAt ?? now, now);
    // D6: the window runs from the start the seller gave, even a past one;
    // D27: or from windowStartAt to windowEndAt.
    const windowStart = windowStartAt ?? input.startAt ?? now;
    const windowEnd = windowEndAt ?? (input.startAt ?? now) + input.durationHours * HOUR;
    if (input.side === 'sell') {
      if (windowEnd <= windowStart) return bad('window ends before it starts');
      if (windowEnd - windowStart > MAX_HOURS * HOUR) return bad('window over 720 h');
      if (windowEnd - Math.max(startAt, windowStart) < HOUR) return bad('window under 1 h');
    }
    let expiresAt: Millis;
    if (input.side === 'sell')
      expiresAt = Math.min(input.expiresAt ?? Infinity, windowEnd - HOUR + 1);
    else if (input.expiresAt !== undefined) expiresAt = input.expiresAt;
    else if (input.flexibleWindowHours !== undefined)
      expiresAt = startAt + input.flexibleWindowHours * HOUR;
    else if (input.type === 'limit') expiresAt = now + 24 * HOUR;
    else expiresAt = Infinity;
    if (expiresAt <= startAt) return bad('expires before it starts');
    const gpus = input.nodes * 8;

    // 2. limit orders: collar, then minimum value
    if (input.type === 'limit') {
      const p = input.limitPrice as number;
      const r2 = this.reference2();
      if (r2 !== null && !inCollar(p, r2)) {
        // The band said with the refusal: every p with r2 ≤ 4p ≤ 3·r2.
        const code = 'price_out_of_collar';
        return {
          ok: false,
          code,
          message: 'price out of collar',
          events,
          collar: {
            referenceTwiceCents: r2,
            reference: this.last !== null ? 'last_trade' : 'mid_price',
            lo: Math.ceil(r2 / 4),
            hi: Math.floor((3 * r2) / 4),
          },
        };
      }
      // D16; a sell counts its window's exact length (D27), in BigInt
      const tooLow =
        input.side === 'buy'
          ? gpus * input.durationHours * p < MIN_VALUE
          : BigInt(gpus * p) * BigInt(windowEnd - windowStart) < BigInt(MIN_VALUE * HOUR);
      if (tooLow) return reject('order_value_too_low', 'value too low', events);
    }

    // 3. flexible buy without a limit price: R first
    const flexMarket =
      input.side === 'buy' && input.type === 'market' && input.flexibleWindowHours !== undefined;
    let R: Cents | null = null;
    if (flexMarket) {
      R = this.estimate(
        {
          nodes: input.nodes,
          durationHours: input.durationHours,
          accountId: input.accountId,
          orgId: input.orgId,
        },
        now,
      ).estimatedPrice;
      if (R !== null && gpus * input.durationHours * R < MIN_VALUE) {
        return reject('order_value_too_low', 'value too low', events);
      }
    }

    const rec: Rec = {
      input,
      id: input.id,
      side: input.side,
      market: input.type === 'market',
      flexMarket,
      allowPartial: input.side === 'buy' && input.allowPartial === true,
      allOrNothing: input.side === 'sell' && input.allOrNothing === true,
      accountId: input.accountId,
      orgId: input.orgId,
      durationHours: input.durationHours,
      clusterId: input.clusterId ?? '',
      acceptedAt: now,
      acceptSeq: 0,
      startAt,
      expiresAt,
      windowStart,
      windowEnd,
      price: input.type === 'limit' ? (input.limitPrice as number) : R,
      remaining: input.nodes,
      state: 'scheduled',
      seq: 0,
    };
    const withR = (r: PlaceResult): PlaceResult =>
      r.ok && flexMarket && R !== null ? { ...r, referencePrice: R } : r;

    if (startAt > now) {
      (rec as { acceptSeq: number }).acceptSeq = this.nextAcceptSeq++;
      this.orders.push(rec);
      return withR({ ok: true, state: 'scheduled', filledNodes: 0, events });
    }

    // 4. arrival now
    const arrived = this.arrive(rec, now, true);
    if (arrived.reject !== undefined) {
      return reject(
        arrived.reject.reject,
        arrived.reject.reject,
        events,
        arrived.reject.missingGpus,
      );
    }
    events.push(...arrived.events);
    return withR({ ok: true, state: arrived.state, filledNodes: arrived.filled, events });
  }

  // ---------------------------------------------------------------- arrival

  /**
   * The arrival of `rec` at time t. On acceptance (`atPlace`) a rejection is
   * returned as such and leaves no trace; for a scheduled order it is turned
   * into a `cancelled` event.
   */
  private arrive(
    rec: Rec,
    t: Millis,
    atPlace: boolean,
  ): {
    reject?: Reject;
    events: BookEvent[];
    filled: number;
    state: 'resting' | 'scheduled' | 'filled' | 'cancelled';
  } {
    const wasKnown = this.orders.includes(rec);
    if (wasKnown) this.remove(rec);
    const accept = (): void => {
      if (!wasKnown) (rec as { acceptSeq: number }).acceptSeq = this.nextAcceptSeq++;
    };
    const before = rec.remaining;

    // A flexible buy without R waits unseen.
    if (rec.flexMarket && rec.price === null) {
      accept();
      rec.state = 'unseen';
      this.orders.push(rec);
      return { events: [], filled: 0, state: 'scheduled' };
    }

    const atMarket = rec.market && !rec.flexMarket;
    let r: Reject | { events: BookEvent[] };
    if (rec.side === 'sell') r = this.sellWalk(rec, t);
    else if (rec.flexMarket) r = this.flexibleArrival(rec, t);
    else r = this.buyWalk(rec, t, atMarket ? 'market' : 'limit', atMarket);
    if ('reject' in r) {
      if (atPlace) return { reject: r, events: [], filled: 0, state: 'cancelled' };
      const reason = r.reject as EngineCancelReason;
      return {
        events: [{ type: 'cancelled', at: t, orderId: rec.id, reason, nodes: rec.remaining }],
        filled: 0,
        state: 'cancelled',
      };
    }
    accept();
    const filled = before - rec.remaining;
    let state: 'resting' | 'filled' | 'cancelled';
    if (rec.remaining === 0) state = 'filled';
    else if (rec.state === 'resting') state = 'resting';
    else state = 'cancelled';
    return { events: r.events, filled, state };
  }

  private rest(rec: Rec, t: Millis): BookEvent {
    rec.state = 'resting';
    rec.seq = this.nextSeq++;
    this.orders.push(rec);
    return {
      type: 'rested',
      at: t,
      orderId: rec.id,
      price: rec.price as number,
      nodes: rec.remaining,
    };
  }

  private recordTrade(fills: Fill[], t: Millis): void {
    const last = fills[fills.length - 1];
    if (last !== undefined) this.last = { price: last.price, gpus: last.nodes * 8, at: t };
  }

  /**
   * The plan of buy B over every compatible ask, its own party's included, for
   * the most it can reach ("Arrival of a buy"). `mode` market: asks inside the
   * collar; limit: asks at or below B's price (limit or R).
   */
  private buyPlan(B: Rec, t: Millis, mode: 'market' | 'limit'): { a: Rec; n: number }[] {
    const r2 = mode === 'market' ? this.reference2() : null;
    const compatible = (a: Rec): boolean =>
      (mode === 'market'
        ? inCollar(a.price as number, r2)
        : (a.price as number) <= (B.price as number)) && fits(a, B.durationHours, t);
    const cands = this.asks()
      .filter(compatible)
      .map((a) => ({ a, avail: a.remaining, whole: a.allOrNothing }));
    const reach = reachTable(cands, B.remaining);
    return planFor(cands, reach, most(reach, B.remaining));
  }

  /** One matching step of B by `plan`. */
  private step(B: Rec, plan: readonly { a: Rec; n: number }[], t: Millis): BookEvent {
    const fills: Fill[] = [];
    for (const { a, n } of plan) {
      a.remaining -= n;
      if (a.remaining === 0) this.remove(a);
      fills.push(fillOf(a, n, t));
      B.remaining -= n;
    }
    this.recordTrade(fills, t);
    return { type: 'matched', at: t, buyOrderId: B.id, fills, buyRemaining: B.remaining };
  }

  /**
   * Arrival of buy B (not in `orders`). `mode` as in buyPlan(). `checkValue`:
   * D16 for a market buy that executes at once.
   */
  private buyWalk(
    B: Rec,
    t: Millis,
    mode: 'market' | 'limit',
    checkValue: boolean,
  ): Reject | { events: BookEvent[] } {
    const need = B.remaining;
    const plan = this.buyPlan(B, t, mode);
    const acc = plan.reduce((s, p) => s + p.n, 0);
    // D17: an own ask the plan takes; one it does not take does not matter.
    if (plan.some(({ a }) => sameParty(a, B))) return { reject: 'self_trade_prevented' };
    if ((!B.allowPartial && acc < need) || (B.allowPartial && acc === 0)) {
      if (mode === 'market')
        return { reject: 'insufficient_liquidity', missingGpus: (need - acc) * 8 };
      return { events: [this.rest(B, t)] };
    }
    if (checkValue) {
      const cost = plan.reduce((s, p) => s + p.n * 8 * B.durationHours * (p.a.price as number), 0);
      if (cost < MIN_VALUE) return { reject: 'order_value_too_low' };
    }
    const events: BookEvent[] = [this.step(B, plan, t)];
    if (B.remaining > 0) {
      if (mode === 'market') {
        events.push({
          type: 'cancelled',
          at: t,
          orderId: B.id,
          reason: 'insufficient_liquidity',
          nodes: B.remaining,
        });
      } else {
        events.push(this.rest(B, t));
      }
    }
    return { events };
  }

  /**
   * Arrival of a flexible buy B with R and no limit price (D14): the market
   * step at once when it fills (D9) and its average price, rounded half-even
   * to a cent, is ≤ R; else, or for what an allowPartial step leaves, the
   * arrival of a limit buy at R.
   */
  private flexibleArrival(B: Rec, t: Millis): Reject | { events: BookEvent[] } {
    const R = B.price as number;
    const plan = this.buyPlan(B, t, 'market');
    const acc = plan.reduce((s, p) => s + p.n, 0);
    const value = plan.reduce((s, p) => s + p.n * (p.a.price as number), 0);
    const fills = B.allowPartial ? acc > 0 : acc === B.remaining;
    if (!fills || mulDivHalfEven([value], acc) > R) return this.buyWalk(B, t, 'limit', false);
    if (plan.some(({ a }) => sameParty(a, B))) return { reject: 'self_trade_prevented' };
    const events = [this.step(B, plan, t)];
    if (B.remaining === 0) return { events };
    const rest = this.buyWalk(B, t, 'limit', false);
    if ('reject' in rest) {
      const reason = rest.reject as EngineCancelReason;
      events.push({ type: 'cancelled', at: t, orderId: B.id, reason, nodes: B.remaining });
      return { events };
    }
    return { events: [...events, ...rest.events] };
  }

  /** Arrival of sell S (not in `orders`): D9's walk over the bids, D17 checked over the whole walk first. */
  private sellWalk(S: Rec, t: Millis): Reject | { events: BookEvent[] } {
    const sp = S.price as number;
    // Simulate on copies of the remaining quantities.
    const rem = new Map<Rec, number>();
    for (const o of this.orders) rem.set(o, o.remaining);
    rem.set(S, S.remaining);
    const get = (o: Rec): number => rem.get(o) as number;
    const restingAsks = this.asks();
    const steps: { B: Rec; plan: { a: Rec; n: number }[] }[] = [];
    /** All-or-nothing B's usable liquidity in ask priority, S after every resting ask of price ≤ S's. */
    const usableFor = (B: Rec): Cand[] => {
      const usable: Rec[] = [];
      let placedS = false;
      for (const a of restingAsks) {
        if (!placedS && (a.price as number) > sp) {
          usable.push(S);
          placedS = true;
        }
        if (
          (a.price as number) <= (B.price as number) &&
          fits(a, B.durationHours, t) &&
          !sameParty(a, B) &&
          get(a) > 0
        )
          usable.push(a);
      }
      if (!placedS) usable.push(S);
      return usable.map((a) => ({ a, avail: get(a), whole: a.allOrNothing }));
    };
    /** B's plan for all it needs from its usable liquidity, or null when that cannot reach it. */
    const planOf = (B: Rec): { a: Rec; n: number }[] | null => {
      const usable = usableFor(B);
      const reach = reachTable(usable, get(B));
      return reach[0]?.[get(B)] === true ? planFor(usable, reach, get(B)) : null;
    };
    /** An allowPartial B may take S: all of it when S is all-or-nothing (D27). */
    const takesS = (B: Rec): boolean => !S.allOrNothing || get(B) >= get(S);
    for (const B of this.bids()) {
      if (get(S) === 0) break;
      const bp = B.price as number;
      if (!(bp >= sp && fits(S, B.durationHours, t))) continue;
      if (sameParty(B, S)) {
        // D17: only if S could trade with B were it another party's.
        if (B.allowPartial ? takesS(B) : planOf(B) !== null)
          return { reject: 'self_trade_prevented' };
        continue;
      }
      if (B.allowPartial) {
        if (!takesS(B)) continue; // passed over
        const n = Math.min(get(B), get(S));
        rem.set(B, get(B) - n);
        rem.set(S, get(S) - n);
        steps.push({ B, plan: [{ a: S, n }] });
        continue;
      }
      const plan = planOf(B);
      if (plan === null) continue; // passed over, keeps its place
      for (const { a, n } of plan) rem.set(a, get(a) - n);
      rem.set(B, 0);
      steps.push({ B, plan });
    }
    // Commit.
    const events: BookEvent[] = [];
    for (const { B, plan } of steps) {
      const fills: Fill[] = [];
      let filled = 0;
      for (const { a, n } of plan) {
        a.remaining -= n;
        filled += n;
        fills.push(fillOf(a, n, t));
        if (a !== S && a.remaining === 0) this.remove(a);
      }
      B.remaining -= filled;
      if (B.remaining === 0) this.remove(B);
      this.recordTrade(fills, t);
      events.push({ type: 'matched', at: t, buyOrderId: B.id, fills, buyRemaining: B.remaining });
    }
    if (S.remaining > 0) events.push(this.rest(S, t));
    return { events };
  }
}
