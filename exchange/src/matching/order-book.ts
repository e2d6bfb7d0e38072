// The fast order book: one per (gpu_type, zone), one writer. The rules it
// implements are written down in docs/matching.md; comments cite spec rules
// ("rule N") and decisions ("DN").
//
// Why one file of ~1,000 lines: this class is the order path's hot loop.
// Its parts (arrival of a buy and of a sell, the walks, the timers) share
// the book's fields and the running command's scratch state, and V8 inlines
// private methods of one class where calls across modules with shared state
// would need that state passed around on every order. The pieces that stand
// alone are already modules of their own (book-side, fill-planner,
// expiry-queues, timer-heap, order-rec, validate); npm run bench -- engine
// measures the whole (docs/benchmarks.md).
import {
  COLLAR_PERCENT,
  GPUS_PER_NODE,
  HOUR_MS,
  MAX_DURATION_HOURS,
  MIN_ORDER_VALUE_CENTS,
  mulDivHalfEven,
} from '@gpux/shared';

import { BookSide } from './book-side.js';
import { ExpiryQueues } from './expiry-queues.js';
import { FillPlanner } from './fill-planner.js';
import {
  DONE,
  NO_PRICE,
  OrderRec,
  RESTING,
  SCHEDULED,
  UNSEEN,
  leaseStart,
  sameParty,
  windowLeft,
} from './order-rec.js';
import type { RecState } from './order-rec.js';
import { Plan } from './plan.js';
import { TimerHeap } from './timer-heap.js';
import type {
  Book,
  BookEvent,
  BookSnapshot,
  CancelResult,
  CollarBand,
  Cents,
  EngineCancelReason,
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
} from './types.js';
import { MAX_NODES, sellWindowEnd, sellWindowStart, validateOrderInput } from './validate.js';

const DAY_MS = 24 * HOUR_MS;
/** D15: the collar is [r × COLLAR_LO / 100, r × COLLAR_HI / 100]. */
const COLLAR_LO = 100 - COLLAR_PERCENT;
const COLLAR_HI = 100 + COLLAR_PERCENT;

export class OrderBook implements Book {
  private readonly bids = new BookSide(true);
  private readonly asks = new BookSide(false);
  /** Resting, scheduled and unseen orders by id. */
  private readonly open = new Map<string, OrderRec>();
  /** Scheduled orders' arrivals (D13). */
  private readonly timers = new TimerHeap();
  /** Every open order with a finite expiry (D12). */
  private readonly expiries = new ExpiryQueues();
  private now: Millis = 0;
  private accepted = 0;
  /** Orders that have entered the visible book: the last `seq` given. */
  private entered = 0;
  private last: LastTrade | null = null;
  /** The running command's events. */
  private events: BookEvent[] = [];
  /** Collar bounds (inclusive, integer cents) as of the last collar() call. */
  private bandLo = -Infinity;
  private bandHi = Infinity;
  private missingNodes = 0;
  /** Set by planBuy(): the plan takes an ask of the buy's own party (D17). */
  private planOwn = false;
  /** Timer entries of orders that are done (see forget()). */
  private deadTimers = 0;
  /**
   * The last all-or-nothing bid of the running sell walk found short: its
   * price, lease and the liquidity it could reach, whatever the party.
   */
  private shortPrice = -1;
  private shortDurationMs = 0;
  private shortTotal = 0;
  /**
   * An operator halted the book (issue 21, docs/api/admin.md): its clock
   * goes on but no timer fires. Once it is resumed, what fell due meanwhile
   * fires at once (resumeAt): expiries at their own times, arrivals and
   * window ends (which may trade) at the resumption's: nothing trades in a halt.
   */
  private halted = false;

  // A walk is planned here first and applied only once it is known to stand
  // (D17: a rejected order fills nothing). Reused across commands.
  private readonly plan = new Plan();
  /** Chooses fills while all-or-nothing asks (D27) are about; see planBuy(). */
  private readonly planner = new FillPlanner();
  private readonly stepBuy: OrderRec[] = [];
  private readonly stepEnd: number[] = [];
  private readonly touched: OrderRec[] = [];

  get clock(): Millis {
    return this.now;
  }

  lastTrade(): LastTrade | null {
    return this.last;
  }

  place(input: OrderInput, now: Millis): PlaceResult {
    const events: BookEvent[] = (this.events = []);
    this.tick(now);
    const t = this.now;

    const invalid = validateOrderInput(input, t);
    if (invalid !== null) return { ok: false, code: 'invalid_request', message: invalid, events };

    const startAt = input.startAt !== undefined && input.startAt > t ? input.startAt : t;
    const isLimit = input.type === 'limit';
    const isBuy = input.side === 'buy';
    const flexHours = input.flexibleWindowHours;
    // D12 expiries. A sell leaves at the first instant no lease fits what is
    // left of its window (D6; the shortest lease is 1 h): standing on as best
    // ask, it would only move the mid and so the collar (D15).
    let expiresAt: Millis;
    if (!isBuy) {
      const noneFits = sellWindowEnd(input, t) - HOUR_MS + 1;
      expiresAt =
        input.expiresAt !== undefined && input.expiresAt < noneFits ? input.expiresAt : noneFits;
    } else if (input.expiresAt !== undefined) expiresAt = input.expiresAt;
    else if (flexHours !== undefined) expiresAt = startAt + flexHours * HOUR_MS;
    else if (isLimit) expiresAt = t + DAY_MS;
    else expiresAt = Infinity;
    if (expiresAt <= startAt) {
      return {
        ok: false,
        code: 'invalid_request',
        message: 'the order would expire before it starts',
        events,
      };
    }

    let price = NO_PRICE;
    let referencePrice: Cents | undefined;
    if (isLimit) {
      price = input.limitPrice as Cents;
      this.collar();
      if (price < this.bandLo || price > this.bandHi) {
        const code = 'price_out_of_collar';
        return {
          ok: false,
          code,
          message: REJECT_MESSAGES[code],
          events,
          collar: this.collarBand(),
        };
      }
      if (isBuy ? buyValueTooLow(input, price) : sellValueTooLow(input, t, price)) {
        return reject('order_value_too_low', events);
      }
    } else if (flexHours !== undefined) {
      // D14: a flexible buy without a limit rests at the estimate's price R.
      const est = this.estimateWalk(input, t, false);
      if (est.estimatedPrice !== null) {
        price = referencePrice = est.estimatedPrice;
        if (buyValueTooLow(input, price)) {
          return reject('order_value_too_low', events);
        }
      }
    }

    const o = new OrderRec(input, t, this.accepted + 1, startAt, expiresAt, price, input.nodes);
    if (startAt > t) {
      // D13: it waits, unseen, and arrives at startAt.
      this.accepted++;
      this.register(o);
      this.scheduleArrival(o);
      if (expiresAt !== Infinity) this.expiries.push(o);
      return { ok: true, state: 'scheduled', filledNodes: 0, referencePrice, events };
    }

    const code = this.arrive(o, t);
    if (code !== null) {
      if (code === 'insufficient_liquidity') {
        const message = REJECT_MESSAGES[code];
        return { ok: false, code, message, missingGpus: this.missingNodes * GPUS_PER_NODE, events };
      }
      return reject(code, events);
    }
    this.accepted++;
    if (o.state !== DONE) {
      this.register(o);
      if (expiresAt !== Infinity) this.expiries.push(o);
    }
    return {
      ok: true,
      state: stateOf(o),
      filledNodes: o.nodes - o.remaining,
      referencePrice,
      events,
    };
  }

  cancel(orderId: string, now: Millis): CancelResult {
    const events: BookEvent[] = (this.events = []);
    this.tick(now);
    const o = this.open.get(orderId);
    if (o === undefined) return { ok: false, code: 'not_found', events };
    const nodes = o.remaining;
    this.close(o, this.now, 'user');
    return { ok: true, nodes, events };
  }

  advance(now: Millis): readonly BookEvent[] {
    const events: BookEvent[] = (this.events = []);
    this.tick(now);
    return events;
  }

  /**
   * Halt (true) or resume (false) the book's timers at `now`; see `halted`.
   * The caller refuses new orders while halted.
   */
  setHalted(halted: boolean, now: Millis): readonly BookEvent[] {
    const events: BookEvent[] = (this.events = []);
    if (halted === this.halted) return events;
    if (halted) {
      this.tick(now);
      this.halted = true;
    } else {
      this.halted = false;
      this.resumeAt(now);
    }
    return events;
  }

  get isHalted(): boolean {
    return this.halted;
  }

  snapshot(depth: number): BookSnapshot {
    const bestBid = this.bids.best()?.price ?? null;
    const bestAsk = this.asks.best()?.price ?? null;
    const both = bestBid !== null && bestAsk !== null;
    return {
      bids: levelsOf(this.bids, depth),
      asks: levelsOf(this.asks, depth),
      bestBid,
      bestAsk,
      spread: both ? bestAsk - bestBid : null,
      midPrice: both ? mulDivHalfEven([bestBid + bestAsk], 2) : null,
      lastTrade: this.last,
    };
  }

  /**
   * From now on, remember which price levels change (the live feed,
   * feed/book-feed.ts): takeChangedLevels() hands their prices over. Off
   * until called, so a book nobody follows records nothing.
   */
  trackLevels(): void {
    this.bids.changed ??= [];
    this.asks.changed ??= [];
  }

  /** Prices of the levels changed since the last call (repeats included); empty unless tracked. */
  takeChangedLevels(): { readonly bids: readonly number[]; readonly asks: readonly number[] } {
    return { bids: takeChanged(this.bids), asks: takeChanged(this.asks) };
  }

  /** The level at `price` on one side as snapshot() shows it; undefined when none rests there. */
  levelAt(bid: boolean, price: Cents): Level | undefined {
    const l = (bid ? this.bids : this.asks).at(price);
    return l === undefined ? undefined : { price, gpus: l.nodes * GPUS_PER_NODE, orders: l.count };
  }

  estimate(query: EstimateQuery, now: Millis): Estimate {
    // The API validates the query; out of these bounds the sums could pass 2^53.
    if (!Number.isInteger(query.nodes) || query.nodes < 1 || query.nodes > MAX_NODES) {
      throw new RangeError(`estimate: nodes must be an integer from 1 to ${MAX_NODES}`);
    }
    if (
      !Number.isInteger(query.durationHours) ||
      query.durationHours < 1 ||
      query.durationHours > MAX_DURATION_HOURS
    ) {
      throw new RangeError(
        `estimate: durationHours must be an integer from 1 to ${MAX_DURATION_HOURS}`,
      );
    }
    return this.estimateWalk(query, now, true);
  }

  /**
   * The estimate's walk. With `full` false it stops once the fills are found
   * (R for a flexible buy needs nothing more), leaving totalAvailable short.
   */
  private estimateWalk(query: EstimateQuery, now: Millis, full: boolean): Estimate {
    if (this.asks.aon !== 0) return this.estimateWithAon(query, now, full);
    this.collar();
    const lo = this.bandLo;
    const hi = this.bandHi;
    const need = query.nodes;
    const durationMs = query.durationHours * HOUR_MS;
    const { accountId, orgId } = query;
    const fills: { price: Cents; gpus: number }[] = [];
    let got = 0;
    let total = 0;
    let costPerHour = 0;
    let worst: Cents | null = null;
    const levels = this.asks.levels;
    for (let i = levels.length - 1; i >= 0; i--) {
      const level = levels[i]!;
      const p = level.price;
      if (p > hi) break;
      if (p < lo) continue;
      for (let o = level.head; o !== null; o = o.next) {
        if (windowLeft(o, now) < durationMs) continue;
        if (o.accountId === accountId || o.orgId === orgId) continue;
        total += o.remaining;
        if (got < need) {
          const take = Math.min(o.remaining, need - got);
          got += take;
          costPerHour += take * GPUS_PER_NODE * p;
          worst = p;
          const lastFill = fills[fills.length - 1];
          if (lastFill !== undefined && lastFill.price === p) lastFill.gpus += take * GPUS_PER_NODE;
          else fills.push({ price: p, gpus: take * GPUS_PER_NODE });
        } else if (!full) {
          break;
        }
      }
      if (!full && got === need) break;
    }
    return this.estimateOf(fills, costPerHour, got, need, worst, total, query.durationHours);
  }

  /**
   * estimateWalk() while all-or-nothing asks rest: the fills are the plan of
   * a market buy of `query.nodes` (docs/matching.md, "Choosing the fills").
   */
  private estimateWithAon(query: EstimateQuery, now: Millis, full: boolean): Estimate {
    this.collar();
    const lo = this.bandLo;
    const hi = this.bandHi;
    const need = query.nodes;
    const durationMs = query.durationHours * HOUR_MS;
    const { accountId, orgId } = query;
    const planner = this.planner;
    planner.reset(need);
    let collecting = true;
    let total = 0;
    const levels = this.asks.levels;
    walk: for (let i = levels.length - 1; i >= 0; i--) {
      const level = levels[i]!;
      const p = level.price;
      if (p > hi) break;
      if (p < lo) continue;
      for (let o = level.head; o !== null; o = o.next) {
        if (windowLeft(o, now) < durationMs) continue;
        if (o.accountId === accountId || o.orgId === orgId) continue;
        if (!o.allOrNothing || o.remaining <= need) total += o.remaining;
        if (collecting) collecting = planner.push(o, o.remaining);
        else if (!full) break walk;
      }
    }
    planner.prepare();
    const got = planner.best();
    const plan = this.plan;
    plan.len = 0;
    planner.planTo(got, plan);
    const fills: { price: Cents; gpus: number }[] = [];
    let costPerHour = 0;
    let worst: Cents | null = null;
    for (let i = 0; i < plan.len; i++) {
      const p = plan.order(i).price;
      const take = plan.nodesAt(i);
      costPerHour += take * GPUS_PER_NODE * p;
      worst = p;
      const lastFill = fills[fills.length - 1];
      if (lastFill !== undefined && lastFill.price === p) lastFill.gpus += take * GPUS_PER_NODE;
      else fills.push({ price: p, gpus: take * GPUS_PER_NODE });
    }
    plan.len = 0;
    return this.estimateOf(fills, costPerHour, got, need, worst, total, query.durationHours);
  }

  /** An estimate from its fills and sums (estimateWalk, estimateWithAon). */
  private estimateOf(
    fills: { price: Cents; gpus: number }[],
    costPerHour: number,
    got: number,
    need: number,
    worst: Cents | null,
    total: number,
    durationHours: number,
  ): Estimate {
    return {
      fills,
      estimatedPrice: got > 0 ? mulDivHalfEven([costPerHour], got * GPUS_PER_NODE) : null,
      bestAsk: this.asks.best()?.price ?? null,
      worstFillPrice: worst,
      totalAvailable: total * GPUS_PER_NODE,
      sufficientLiquidity: got === need,
      missingGpus: (need - got) * GPUS_PER_NODE,
      computeCostCents: costPerHour * durationHours,
    };
  }

  /** One open order as `openOrders()` gives it; undefined once it is filled or gone. */
  openOrder(id: string): OpenOrder | undefined {
    const o = this.open.get(id);
    return o === undefined ? undefined : openOrderOf(o);
  }

  openOrders(): OpenOrder[] {
    const out: OpenOrder[] = [];
    for (const side of [this.bids, this.asks]) {
      const levels = side.levels;
      for (let i = levels.length - 1; i >= 0; i--) {
        for (let o = levels[i]!.head; o !== null; o = o.next) out.push(openOrderOf(o));
      }
    }
    const waiting: OrderRec[] = [];
    for (const o of this.open.values()) if (o.state !== RESTING) waiting.push(o);
    waiting.sort((a, b) => a.acceptSeq - b.acceptSeq);
    for (const o of waiting) out.push(openOrderOf(o));
    return out;
  }

  /**
   * Rebuild a book from `openOrders()` of another, in any order (the exchange
   * does this from PostgreSQL at start): resting orders queue by their `seq`.
   * `counters` continue the numbering of acceptance and of entry into the
   * book; by default they go on from the highest numbers in the list.
   */
  static restore(
    orders: readonly OpenOrder[],
    lastTrade: LastTrade | null,
    clock: Millis,
    counters?: { readonly accepted: number; readonly entered: number },
  ): OrderBook {
    const book = new OrderBook();
    book.now = clock;
    book.last = lastTrade;
    const resting: OrderRec[] = [];
    for (const oo of orders) {
      const o = new OrderRec(
        oo.input,
        oo.acceptedAt,
        oo.acceptSeq,
        oo.startAt,
        oo.expiresAt,
        oo.price ?? NO_PRICE,
        oo.remaining,
      );
      book.register(o);
      if (oo.state === 'resting') {
        if (oo.seq === null) throw new Error(`restore: resting order ${o.id} has no seq`);
        o.state = RESTING;
        o.seq = oo.seq;
        resting.push(o);
      } else if (oo.state === 'scheduled') {
        o.state = SCHEDULED;
        book.scheduleArrival(o);
      } else {
        o.state = UNSEEN;
      }
      if (o.acceptSeq > book.accepted) book.accepted = o.acceptSeq;
      if (o.seq > book.entered) book.entered = o.seq;
    }
    // ExpiryQueues takes orders in acceptance order.
    const byAcceptance = [...book.open.values()].sort((a, b) => a.acceptSeq - b.acceptSeq);
    for (const o of byAcceptance) if (o.expiresAt !== Infinity) book.expiries.push(o);
    resting.sort((a, b) => a.seq - b.seq);
    for (const o of resting) (o.isBuy ? book.bids : book.asks).append(o);
    // Numbers and the clock never go back, whatever the caller passes.
    if (counters !== undefined) {
      book.accepted = Math.max(book.accepted, counters.accepted);
      book.entered = Math.max(book.entered, counters.entered);
    }
    for (const o of book.open.values()) if (o.acceptedAt > book.now) book.now = o.acceptedAt;
    return book;
  }

  private scheduleArrival(o: OrderRec): void {
    this.timers.push(o.startAt, o);
    o.timers++;
  }

  /**
   * An open order is done: out of the id map and the expiry heap. Its arrival
   * entry, if it still has one, is dead: skipped when due, or dropped with
   * the others once they are more than half the heap.
   */
  private forget(o: OrderRec): void {
    this.open.delete(o.id);
    this.expiries.remove(o);
    this.deadTimers += o.timers;
  }

  /**
   * Order ids are the exchange's own (newId), unique by construction, so
   * place() does not look them up: in a book of half a million orders that
   * miss costs a fifth of the order path. A duplicate is a caller bug; it is
   * caught here, when the second order becomes open, and thrown: the book may
   * have traded it already, so the exchange must rebuild from its database.
   */
  private register(o: OrderRec): void {
    const size = this.open.size;
    this.open.set(o.id, o);
    if (this.open.size === size) {
      throw new Error(`order id ${o.id} is already open in this book: ids must be unique`);
    }
  }

  // ---- time ---------------------------------------------------------------

  /**
   * Advance the clock to `now`, firing due timers at their own times: in
   * order of time, expiries before arrivals, then acceptance order.
   */
  private tick(now: Millis): void {
    const target = now > this.now ? now : this.now;
    if (this.halted) {
      this.now = target;
      return;
    }
    const timers = this.timers;
    const expiries = this.expiries;
    for (;;) {
      const e = expiries.peek();
      const expiryAt = e === undefined ? Infinity : e.expiresAt;
      const arrivalAt = timers.peekTime();
      if (e !== undefined && expiryAt <= arrivalAt) {
        if (expiryAt > target) break;
        expiries.remove(e);
        if (expiryAt > this.now) this.now = expiryAt;
        if (e.marketAtEnd) this.marketAtWindowEnd(e, expiryAt);
        else this.close(e, expiryAt, 'expired');
        continue;
      }
      if (arrivalAt > target) break;
      if (arrivalAt > this.now) this.now = arrivalAt;
      this.fireArrival(this.now);
    }
    this.now = target;
    if (this.deadTimers > 1024 && 2 * this.deadTimers > timers.size) {
      timers.dropDone(isDone);
      this.deadTimers = 0;
    }
  }

  /** The first arrival timer fires: its order arrives at `t` (D13), unless it is done. */
  private fireArrival(t: Millis): void {
    const timers = this.timers;
    const o = timers.firstOrder();
    timers.pop();
    o.timers--;
    if (o.state === DONE) {
      this.deadTimers--;
      return;
    }
    const code = this.arrive(o, t);
    if (code !== null) this.close(o, t, deferredReason(code));
    // arrive() may have filled it (TS cannot see that mutation).
    else if ((o.state as RecState) === DONE) this.forget(o);
  }

  /**
   * Resume a halted book at `now` (see `halted`): first every order whose
   * expiry fell in the halt leaves at that time, trading nothing; then, at
   * `now`, the arrivals (D13) and flexible windows' ends (D14) that fell due,
   * in the order of their times.
   */
  private resumeAt(now: Millis): void {
    const t = now > this.now ? now : this.now;
    const windowEnds: OrderRec[] = [];
    for (let e = this.expiries.peek(); e !== undefined && e.expiresAt <= t;) {
      this.expiries.remove(e);
      if (e.expiresAt > this.now) this.now = e.expiresAt;
      if (e.marketAtEnd) windowEnds.push(e);
      else this.close(e, e.expiresAt, 'expired');
      e = this.expiries.peek();
    }
    this.now = t;
    let i = 0;
    for (;;) {
      const w = windowEnds[i];
      const arrivalAt = this.timers.peekTime();
      if (w !== undefined && w.expiresAt <= arrivalAt) {
        // An arrival before its window's end may have filled it.
        if (w.state !== DONE) this.marketAtWindowEnd(w, t);
        i++;
      } else if (arrivalAt <= t) this.fireArrival(t);
      else break;
    }
  }

  /** D14: at the window's end a flexible buy without a limit executes at market. */
  private marketAtWindowEnd(o: OrderRec, t: Millis): void {
    if (o.state === RESTING) this.bids.remove(o);
    o.state = UNSEEN; // out of the visible book, so close() has nothing to unlink
    const code = this.executeMarket(o, t);
    if (code !== null) this.close(o, t, deferredReason(code));
    else this.forget(o);
  }

  /** Take an open order out of the book unfilled for what it has left. */
  private close(o: OrderRec, t: Millis, reason: EngineCancelReason): void {
    if (o.state === RESTING) (o.isBuy ? this.bids : this.asks).remove(o);
    o.state = DONE;
    this.forget(o);
    this.events.push({ type: 'cancelled', at: t, orderId: o.id, reason, nodes: o.remaining });
  }

  // ---- arrival ------------------------------------------------------------

  /**
   * An order arrives in the book at t (on acceptance, or at its startAt).
   * Returns the reason it is turned away, having changed nothing, or null.
   */
  private arrive(o: OrderRec, t: Millis): RejectCode | null {
    if (!o.isBuy) return this.arriveSell(o, t);
    if (o.isMarket) return this.executeMarket(o, t);
    if (o.price === NO_PRICE) {
      o.state = UNSEEN; // D14 without a reference price: waits for its window's end
      return null;
    }
    if (o.marketAtEnd) return this.arriveFlexibleBuy(o, t);
    return this.arriveLimitBuy(o, t);
  }

  private arriveLimitBuy(b: OrderRec, t: Millis): RejectCode | null {
    const got = this.planBuy(b, t, -Infinity, b.price, true);
    if (this.planOwn) return 'self_trade_prevented';
    if (b.allowPartial ? got > 0 : got === b.remaining)
      this.applyStep(b, t, 0, this.plan.len, null, false);
    if (b.remaining > 0) this.rest(b, t);
    else b.state = DONE;
    return null;
  }

  /**
   * D14: a flexible buy without a limit price, on arrival, takes the market
   * step at once when that step's average price (half-even cent, as the
   * estimate's) is at or below its R; else it arrives as a limit buy at R.
   * Nodes an allowPartial step leaves wait at R too (docs/matching.md,
   * "Flexible orders").
   */
  private arriveFlexibleBuy(b: OrderRec, t: Millis): RejectCode | null {
    this.collar();
    const got = this.planBuy(b, t, this.bandLo, this.bandHi, false);
    if (b.allowPartial ? got === 0 : got < b.remaining) return this.arriveLimitBuy(b, t);
    const plan = this.plan;
    let value = 0;
    for (let i = 0; i < plan.len; i++) value += plan.nodesAt(i) * plan.order(i).price;
    if (mulDivHalfEven([value], got) > b.price) return this.arriveLimitBuy(b, t);
    if (this.planOwn) return 'self_trade_prevented';
    this.applyStep(b, t, 0, plan.len, null, false);
    if (b.remaining === 0) {
      b.state = DONE;
      return null;
    }
    // Only asks under the collar can still be at or below R: the step took
    // the most the asks inside it could give.
    const code = this.arriveLimitBuy(b, t);
    if (code !== null) this.close(b, t, deferredReason(code));
    return null;
  }

  /**
   * D10: a market buy fills now inside the collar, or is turned away whole.
   * D16 is checked on its fills unless it was checked at acceptance on a
   * price (a flexible buy's R): a market buy has no price to check before.
   */
  private executeMarket(b: OrderRec, t: Millis): RejectCode | null {
    this.collar();
    const got = this.planBuy(b, t, this.bandLo, this.bandHi, true);
    if (this.planOwn) return 'self_trade_prevented';
    if (got === 0 || (!b.allowPartial && got < b.remaining)) {
      this.missingNodes = b.remaining - got;
      return 'insufficient_liquidity';
    }
    if (b.price === NO_PRICE) {
      let value = 0;
      const plan = this.plan;
      for (let i = 0; i < plan.len; i++) {
        value += plan.nodesAt(i) * plan.order(i).price;
      }
      if (value * GPUS_PER_NODE * b.durationHours < MIN_ORDER_VALUE_CENTS)
        return 'order_value_too_low';
    }
    this.applyStep(b, t, 0, this.plan.len, null, false);
    if (b.remaining > 0) {
      this.events.push({
        type: 'cancelled',
        at: t,
        orderId: b.id,
        reason: 'insufficient_liquidity',
        nodes: b.remaining,
      });
    }
    b.state = DONE;
    return null;
  }

  /**
   * Plan an arriving buy's walk over the asks priced in [lo, hi] that fit it
   * (D6): the nodes it would take, in ask priority, into the plan. Returns
   * the nodes found and sets planOwn when the plan takes an ask of b's own
   * party (D17); with `stopAtOwn` the walk ends there, the plan unfinished.
   */
  private planBuy(b: OrderRec, t: Millis, lo: number, hi: number, stopAtOwn: boolean): number {
    this.planOwn = false;
    if (this.asks.aon !== 0) return this.planBuyWithAon(b, t, lo, hi);
    const plan = this.plan;
    plan.len = 0;
    const need = b.remaining;
    const durationMs = b.durationMs;
    let got = 0;
    const levels = this.asks.levels;
    for (let i = levels.length - 1; i >= 0; i--) {
      const level = levels[i]!;
      if (level.price > hi) break;
      if (level.price < lo) continue;
      for (let a = level.head; a !== null; a = a.next) {
        if (windowLeft(a, t) < durationMs) continue;
        if (sameParty(a, b)) {
          this.planOwn = true;
          if (stopAtOwn) return got;
        }
        const take = a.remaining < need - got ? a.remaining : need - got;
        plan.push(a, take);
        got += take;
        if (got === need) return got;
      }
    }
    return got;
  }

  /**
   * planBuy() while all-or-nothing asks rest (docs/matching.md, "Choosing the
   * fills"): the plan for the most b can reach, own asks counted like any
   * other. Returns that amount; planOwn when the plan takes from an ask of
   * b's own party (D17): one it would not take does not matter.
   */
  private planBuyWithAon(b: OrderRec, t: Millis, lo: number, hi: number): number {
    const planner = this.planner;
    planner.reset(b.remaining);
    const durationMs = b.durationMs;
    const levels = this.asks.levels;
    walk: for (let i = levels.length - 1; i >= 0; i--) {
      const level = levels[i]!;
      if (level.price > hi) break;
      if (level.price < lo) continue;
      for (let a = level.head; a !== null; a = a.next) {
        if (windowLeft(a, t) < durationMs) continue;
        if (!planner.push(a, a.remaining)) break walk;
      }
    }
    planner.prepare();
    const got = planner.best();
    const plan = this.plan;
    plan.len = 0;
    planner.planTo(got, plan);
    for (let i = 0; i < plan.len; i++) if (sameParty(plan.order(i), b)) this.planOwn = true;
    return got;
  }

  /**
   * Apply plan entries [from, to) as one matching step of buy b: resting (a
   * sell's walk) or arriving. `s` is the arriving sell, not yet in the book.
   */
  private applyStep(
    b: OrderRec,
    t: Millis,
    from: number,
    to: number,
    s: OrderRec | null,
    resting: boolean,
  ): void {
    const fills: Fill[] = [];
    let total = 0;
    const plan = this.plan;
    for (let i = from; i < to; i++) {
      const a = plan.order(i);
      const n = plan.nodesAt(i);
      if (a === s) a.remaining -= n;
      else this.takeFromAsk(a, n);
      total += n;
      fills.push({
        sellOrderId: a.id,
        clusterId: a.clusterId,
        nodes: n,
        price: a.price,
        sellRemaining: a.remaining,
        leaseStartAt: leaseStart(a, t),
      });
    }
    if (!resting) b.remaining -= total;
    else {
      this.bids.reduce(b, total);
      if (b.remaining === 0) {
        b.state = DONE;
        this.forget(b);
      }
    }
    const lastFill = fills[fills.length - 1]!;
    this.last = { price: lastFill.price, gpus: lastFill.nodes * GPUS_PER_NODE, at: t };
    this.events.push({
      type: 'matched',
      at: t,
      buyOrderId: b.id,
      fills,
      buyRemaining: b.remaining,
    });
  }

  private takeFromAsk(a: OrderRec, nodes: number): void {
    this.asks.reduce(a, nodes);
    if (a.remaining === 0) {
      a.state = DONE;
      this.forget(a);
    }
  }

  /**
   * An arriving sell walks the bids (rule 2, D9, D17). Every fill needs the
   * new sell (before it no bid could fill), so one pass over the bids it
   * crosses is the whole of "match until nothing fills".
   */
  private arriveSell(s: OrderRec, t: Millis): RejectCode | null {
    const { plan, stepBuy, stepEnd, touched } = this;
    plan.len = 0;
    // Emptying an empty array still costs a runtime call: skip it.
    if (stepBuy.length !== 0) stepBuy.length = stepEnd.length = 0;
    if (touched.length !== 0) touched.length = 0;
    let sLeft = s.remaining;
    // D27: an all-or-nothing sell goes whole to one bid, which ends the walk.
    const sWhole = s.allOrNothing;
    this.shortPrice = -1;
    const left = windowLeft(s, t);
    const bidLevels = this.bids.levels;
    let conflict = false;
    walk: for (let i = bidLevels.length - 1; i >= 0 && sLeft > 0; i--) {
      const level = bidLevels[i]!;
      if (level.price < s.price) break;
      for (let b = level.head; b !== null && sLeft > 0; b = b.next) {
        if (b.durationMs > left) continue;
        if (sameParty(b, s)) {
          // D17: a conflict only if s could trade with b, were it another
          // party's: an all-or-nothing bid it could not help fill, or a bid
          // too small for an all-or-nothing s (D27), is passed over.
          if (
            b.allowPartial
              ? !sWhole || b.remaining >= sLeft
              : this.planAllOrNothing(b, s, sLeft, t, false) >= 0
          ) {
            conflict = true;
            break walk;
          }
          continue;
        }
        if (b.allowPartial) {
          if (sWhole && b.remaining < sLeft) continue;
          const take = b.remaining < sLeft ? b.remaining : sLeft;
          plan.push(s, take);
          sLeft -= take;
          stepBuy.push(b);
          stepEnd.push(plan.len);
        } else {
          const fromS = this.planAllOrNothing(b, s, sLeft, t, true);
          if (fromS > 0) sLeft -= fromS;
        }
      }
    }
    for (const a of touched) a.planned = 0;
    if (conflict) return 'self_trade_prevented';

    let from = 0;
    for (let k = 0; k < stepBuy.length; k++) {
      const to = stepEnd[k]!;
      this.applyStep(stepBuy[k]!, t, from, to, s, true);
      from = to;
    }
    if (s.remaining > 0) this.rest(s, t);
    else s.state = DONE;
    return null;
  }

  /**
   * D9: an all-or-nothing bid b fills from every ask it may trade with (price,
   * window, party) plus the arriving sell s, which sits after the resting asks
   * priced at or below its own. When that covers b, plans the step (`commit`)
   * and returns the nodes taken from s; else returns -1: b is passed over.
   */
  private planAllOrNothing(
    b: OrderRec,
    s: OrderRec,
    sLeft: number,
    t: Millis,
    commit: boolean,
  ): number {
    const need = b.remaining;
    const durationMs = b.durationMs;
    // Liquidity only shrinks during a walk, and a bid priced no higher with a
    // lease no shorter can use no more of it than the last bid found short
    // (whatever its party): if it needs more than that one found, it is short
    // too. Without this, a queue of large all-or-nothing bids costs bids × asks.
    if (
      b.price <= this.shortPrice &&
      durationMs >= this.shortDurationMs &&
      need > this.shortTotal
    ) {
      return -1;
    }
    if (this.asks.aon !== 0 || s.allOrNothing) {
      return this.planAllOrNothingWithAon(b, s, sLeft, t, commit);
    }
    const plan = this.plan;
    const start = plan.len;
    let got = 0;
    /** Nodes of b's own party's asks it passed: they count for the bound above. */
    let own = 0;
    let fromS = 0;
    let sPlaced = false;
    const askLevels = this.asks.levels;
    for (let j = askLevels.length - 1; j >= 0 && got < need; j--) {
      const level = askLevels[j]!;
      if (!sPlaced && level.price > s.price) {
        sPlaced = true;
        fromS = sLeft < need - got ? sLeft : need - got;
        plan.push(s, fromS);
        got += fromS;
        if (got === need) break;
      }
      if (level.price > b.price) break;
      for (let a = level.head; a !== null && got < need; a = a.next) {
        if (windowLeft(a, t) < durationMs) continue;
        const avail = a.remaining - a.planned;
        if (avail <= 0) continue;
        if (sameParty(a, b)) {
          own += avail;
          continue;
        }
        const take = avail < need - got ? avail : need - got;
        plan.push(a, take);
        got += take;
      }
    }
    if (!sPlaced && got < need) {
      fromS = sLeft < need - got ? sLeft : need - got;
      plan.push(s, fromS);
      got += fromS;
    }
    if (got < need || !commit) {
      plan.len = start;
      if (got >= need) return fromS;
      this.shortPrice = b.price;
      this.shortDurationMs = durationMs;
      this.shortTotal = got + own;
      return -1;
    }
    this.commitStep(b, s, start);
    return fromS;
  }

  /**
   * Book plan entries [start, plan.len) as bid b's step of the sell walk:
   * the resting asks they take are marked planned (s is not in the book).
   */
  private commitStep(b: OrderRec, s: OrderRec, start: number): void {
    const plan = this.plan;
    for (let i = start; i < plan.len; i++) {
      const a = plan.order(i);
      if (a !== s) {
        if (a.planned === 0) this.touched.push(a);
        a.planned += plan.nodesAt(i);
      }
    }
    this.stepBuy.push(b);
    this.stepEnd.push(plan.len);
  }

  /**
   * planAllOrNothing() when all-or-nothing asks rest or s is one: b fills
   * when its remaining nodes are reachable from the usable asks (docs/matching.md,
   * "Choosing the fills"), by its plan for them.
   */
  private planAllOrNothingWithAon(
    b: OrderRec,
    s: OrderRec,
    sLeft: number,
    t: Millis,
    commit: boolean,
  ): number {
    const need = b.remaining;
    const durationMs = b.durationMs;
    const planner = this.planner;
    planner.reset(need);
    let collecting = true;
    /** Nodes of the usable asks and of b's own party's asks passed (for the bound). */
    let total = 0;
    let own = 0;
    let sPlaced = false;
    const askLevels = this.asks.levels;
    walk: for (let j = askLevels.length - 1; j >= 0; j--) {
      const level = askLevels[j]!;
      if (!sPlaced && level.price > s.price) {
        sPlaced = true;
        total += sLeft;
        if (!(collecting = planner.push(s, sLeft))) break;
      }
      if (level.price > b.price) break;
      for (let a = level.head; a !== null; a = a.next) {
        if (windowLeft(a, t) < durationMs) continue;
        const avail = a.remaining - a.planned;
        if (avail <= 0) continue;
        if (sameParty(a, b)) {
          own += avail;
          continue;
        }
        total += avail;
        if (!(collecting = planner.push(a, avail))) break walk;
      }
    }
    if (!sPlaced && collecting) {
      total += sLeft;
      planner.push(s, sLeft);
    }
    planner.prepare();
    if (!planner.reachable(need)) {
      this.shortPrice = b.price;
      this.shortDurationMs = durationMs;
      this.shortTotal = total + own;
      return -1;
    }
    if (!commit) return 0;
    const plan = this.plan;
    const start = plan.len;
    planner.planTo(need, plan);
    let fromS = 0;
    for (let i = start; i < plan.len; i++) if (plan.order(i) === s) fromS = plan.nodesAt(i);
    this.commitStep(b, s, start);
    return fromS;
  }

  private rest(o: OrderRec, t: Millis): void {
    o.state = RESTING;
    o.seq = ++this.entered;
    (o.isBuy ? this.bids : this.asks).append(o);
    this.events.push({ type: 'rested', at: t, orderId: o.id, price: o.price, nodes: o.remaining });
  }

  /** D15: sets bandLo/bandHi around the last trade, else the mid, else none. */
  /** The band of the last collar() call, for a refusal's details (D15). */
  private collarBand(): CollarBand | undefined {
    if (this.last !== null) {
      const twice = this.last.price * 2;
      return {
        referenceTwiceCents: twice,
        reference: 'last_trade',
        lo: this.bandLo,
        hi: this.bandHi,
      };
    }
    const bid = this.bids.best();
    const ask = this.asks.best();
    if (bid === undefined || ask === undefined) return undefined;
    return {
      referenceTwiceCents: bid.price + ask.price,
      reference: 'mid_price',
      lo: this.bandLo,
      hi: this.bandHi,
    };
  }

  private collar(): void {
    if (this.last !== null) {
      const r = this.last.price;
      this.bandLo = Math.ceil((r * COLLAR_LO) / 100);
      this.bandHi = Math.floor((r * COLLAR_HI) / 100);
      return;
    }
    const bid = this.bids.best();
    const ask = this.asks.best();
    if (bid !== undefined && ask !== undefined) {
      // The mid may be a half cent: work on twice it, exactly.
      const twiceMid = bid.price + ask.price;
      this.bandLo = Math.ceil((twiceMid * COLLAR_LO) / 200);
      this.bandHi = Math.floor((twiceMid * COLLAR_HI) / 200);
      return;
    }
    this.bandLo = -Infinity;
    this.bandHi = Infinity;
  }
}

/** What the API answers (docs/api/errors.md); the rules are D15, D16, D17 and D10. */
const REJECT_MESSAGES: Record<RejectCode, string> = {
  invalid_request: 'invalid order',
  price_out_of_collar:
    'limit_price is more than 50% away from the reference price (the last trade, else the mid price)',
  order_value_too_low: 'the order is worth less than $10 (gpu_count × duration_hours × price)',
  self_trade_prevented: 'the order would trade with an order of its own account or organization',
  insufficient_liquidity: 'not enough liquidity to fill the market order within the price collar',
};

/** D16 on a buy's price (a limit price, or R): nodes × 8 × hours × price. */
function buyValueTooLow(o: OrderInput, price: Cents): boolean {
  return o.nodes * GPUS_PER_NODE * o.durationHours * price < MIN_ORDER_VALUE_CENTS;
}

/**
 * D16 on a sell: nodes × 8 × price × its window's exact length in hours
 * (D27: a resale's window need not be whole hours), in integers. Validation
 * leaves every window at least 1 h, so only an hourly value under the
 * minimum needs the length, and then the product stays below 2^53.
 */
function sellValueTooLow(o: OrderInput, now: Millis, price: Cents): boolean {
  const hourly = o.nodes * GPUS_PER_NODE * price;
  if (hourly >= MIN_ORDER_VALUE_CENTS) return false;
  const windowMs = sellWindowEnd(o, now) - sellWindowStart(o, now);
  return hourly * windowMs < MIN_ORDER_VALUE_CENTS * HOUR_MS;
}

function reject(code: RejectCode, events: BookEvent[]): PlaceResult {
  return { ok: false, code, message: REJECT_MESSAGES[code], events };
}

/** An order that was accepted and turned away later is cancelled for the same reason. */
function deferredReason(code: RejectCode): EngineCancelReason {
  if (code === 'invalid_request' || code === 'price_out_of_collar') {
    throw new Error(`${code} cannot arise after acceptance`);
  }
  return code;
}

function isDone(o: OrderRec): boolean {
  return o.state === DONE;
}

function stateOf(o: OrderRec): 'resting' | 'scheduled' | 'filled' | 'cancelled' {
  if (o.state === RESTING) return 'resting';
  if (o.state === DONE) return o.remaining === 0 ? 'filled' : 'cancelled';
  return 'scheduled';
}

const NONE: readonly number[] = Object.freeze([]);

/** The prices `side` recorded, and a fresh record when there were any. */
function takeChanged(side: BookSide): readonly number[] {
  const changed = side.changed;
  if (changed === null || changed.length === 0) return NONE;
  side.changed = [];
  return changed;
}

function levelsOf(side: BookSide, depth: number): Level[] {
  const out: Level[] = [];
  const levels = side.levels;
  for (let i = levels.length - 1; i >= 0 && out.length < depth; i--) {
    const l = levels[i]!;
    out.push({ price: l.price, gpus: l.nodes * GPUS_PER_NODE, orders: l.count });
  }
  return out;
}

function openOrderOf(o: OrderRec): OpenOrder {
  return {
    input: o.input,
    state: o.state === RESTING ? 'resting' : o.state === SCHEDULED ? 'scheduled' : 'unseen',
    remaining: o.remaining,
    acceptedAt: o.acceptedAt,
    acceptSeq: o.acceptSeq,
    seq: o.state === RESTING ? o.seq : null,
    startAt: o.startAt,
    expiresAt: o.expiresAt,
    price: o.price === NO_PRICE ? null : o.price,
  };
}
