// Property tests of the fast matching engine (order-book.ts) against the naive
// reference book (testing/naive-book.ts), both written from docs/matching.md.
//
// Seeded and reproducible:
//   GPUX_PROP_SEED   fast-check seed (default 424242); a failure prints its seed
//                    and path, and the shrunk command sequence.
//   GPUX_PROP_RUNS   sequences (default 1000, 40–80 commands each, from
//                    testing/command-generator.ts); the restore property runs half.
//
// The long run is one command, from the repository root:
//   npm run test:props:long            (GPUX_PROP_RUNS=20000)
//   GPUX_PROP_SEED=7 npm run test:props:long      (another seed)
//
// Compared after every command: PlaceResult / CancelResult / advance events
// (everything but `message`), snapshot(50), openOrders() and the clock; estimate()
// at the generated estimate steps. Checked on the fast book after every command,
// from our own bookkeeping of every event since the start: no fillable cross
// (a bid that some choice of the asks it may trade with would fill, all-or-nothing
// asks whole: a crossed pair that cannot trade is fine), nodes conserved per
// accepted order, all-or-nothing buys filled 0 or all, all-or-nothing sells
// (D27) filled whole in one fill or not at all, leases that start at
// max(match, window start) and fit the sell's window (D6, D27), no same-party fill, fill prices
// (= the sell's limit, ≤ the buy's limit or R, inside the collar for market
// executions; a flexible buy's market step on arrival averages at most R, D14),
// market orders never rest.
//
// Normalisation: `undefined` members and `message` are dropped before comparing.
// After a restore, `acceptSeq` is compared as a rank: the doc fixes only its
// order (it breaks ties between timers), not its numbering.

import { isDeepStrictEqual } from 'node:util';

import { mulDivHalfEven } from '@gpux/shared';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import type { Command } from './testing/command-generator.js';
import { commandsArb, commandsWithCutArb } from './testing/command-generator.js';
import { NaiveBook } from './testing/naive-book.js';
import type { Book, BookEvent, Cents, LastTrade, Millis, OpenOrder, OrderInput } from './types.js';

const SEED = Number(process.env['GPUX_PROP_SEED'] ?? 424242);
const RUNS = Number(process.env['GPUX_PROP_RUNS'] ?? 1000);
const HOUR = 3_600_000;
/** Generous: the long run executes in one test. */
const TIMEOUT = Math.max(120_000, RUNS * 200);

// ------------------------------------------------------------------ normalisation

/** Deep copy without `message` members and without undefined members. */
function clean(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(clean);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (k === 'message' || x === undefined) continue;
      out[k] = clean(x);
    }
    return out;
  }
  return v;
}

/**
 * openOrders, with acceptSeq and seq replaced by their ranks when `byRank`:
 * after a restore only their relative order is fixed by the doc.
 */
function normOpen(list: OpenOrder[], byRank: boolean): unknown {
  if (!byRank) return clean(list);
  const ranks = [...list.map((o) => o.acceptSeq)].sort((a, b) => a - b);
  const seqRanks = list.flatMap((o) => (o.seq === null ? [] : [o.seq])).sort((a, b) => a - b);
  return clean(
    list.map((o) => ({
      ...o,
      acceptSeq: ranks.indexOf(o.acceptSeq),
      seq: o.seq === null ? null : seqRanks.indexOf(o.seq),
    })),
  );
}

/** Deep equality, cheap when it holds; vitest's diff when it does not. */
function same(actual: unknown, expected: unknown, what: string): void {
  if (!isDeepStrictEqual(actual, expected)) expect(actual, what).toEqual(expected);
}

function assert(cond: boolean, what: string): void {
  if (!cond) throw new Error(`invariant violated: ${what}`);
}

// ------------------------------------------------------------------ running

type Outcome = { readonly result: unknown; readonly events: readonly BookEvent[] };

function run(book: Book, c: Command): Outcome {
  switch (c.kind) {
    case 'place': {
      const r = book.place(c.input, c.now);
      return { result: r, events: r.events };
    }
    case 'cancel': {
      const r = book.cancel(c.orderId, c.now);
      return { result: r, events: r.events };
    }
    case 'advance': {
      const events = book.advance(c.now);
      return { result: events, events };
    }
    case 'estimate':
      return { result: book.estimate(c.query, c.now), events: [] };
  }
}

function describeCmd(c: Command): string {
  return JSON.stringify(c, (_k, v: unknown) => (v === Infinity ? 'Infinity' : v));
}

/** Same observable state of two books. */
function expectSameState(fast: Book, ref: Book, where: string, seqByRank = false): void {
  same(clean(fast.snapshot(50)), clean(ref.snapshot(50)), `${where}: snapshot`);
  same(
    normOpen(fast.openOrders(), seqByRank),
    normOpen(ref.openOrders(), seqByRank),
    `${where}: openOrders`,
  );
  same(fast.clock, ref.clock, `${where}: clock`);
  same(clean(fast.lastTrade()), clean(ref.lastTrade()), `${where}: lastTrade`);
}

// ------------------------------------------------------------------ invariants

interface Ledger {
  readonly input: OrderInput;
  filled: number;
  cancelled: number;
  /** R of a flexible buy without a limit price. */
  R: Cents | null;
  /** When its flexible market step is due (expiry). */
  expiresAt: Millis | null;
  /** The book's clock when it was accepted. */
  acceptedAt: Millis;
}

/** A sell's window (D6, D27), from its input and acceptance time. */
function windowOf(input: OrderInput, acceptedAt: Millis): { start: Millis; end: Millis } {
  return {
    start: input.windowStartAt ?? input.startAt ?? acceptedAt,
    end: input.windowEndAt ?? (input.startAt ?? acceptedAt) + input.durationHours * HOUR,
  };
}

/** Bookkeeping of every event seen on the fast book since the start. */
class Auditor {
  private readonly orders = new Map<string, Ledger>();
  /** The visible book, rebuilt from events: id → [price, nodes]. */
  private readonly visible = new Map<string, { price: Cents; nodes: number }>();
  private last: LastTrade | null = null;

  constructor(private readonly book: Book) {}

  /**
   * A new order accepted by the command whose events come next. An id may be
   * reused once its first holder is closed (the doc rejects only ids still
   * open), so the new ledger replaces the old one only when the old one is
   * complete: timer events of the same command may still close the old holder.
   */
  private pending: Ledger | null = null;

  accepted(input: OrderInput, R: Cents | null): void {
    const open = this.book.openOrders().find((o) => o.input.id === input.id);
    this.pending = {
      input,
      filled: 0,
      cancelled: 0,
      R,
      expiresAt: open?.expiresAt ?? null,
      acceptedAt: this.book.clock,
    };
  }

  private ledger(id: string): Ledger | undefined {
    const p = this.pending;
    if (p !== null && p.input.id === id) {
      const old = this.orders.get(id);
      if (old === undefined || old.filled + old.cancelled === old.input.nodes) {
        this.orders.set(id, p);
        this.pending = null;
      }
    }
    return this.orders.get(id);
  }

  private flush(): void {
    if (this.pending !== null) {
      this.orders.set(this.pending.input.id, this.pending);
      this.pending = null;
    }
  }

  private ref2(exclude: string): number | null {
    if (this.last !== null) return 2 * this.last.price;
    let bid: number | null = null;
    let ask: number | null = null;
    for (const [id, v] of this.visible) {
      if (id === exclude) continue;
      const side = this.orders.get(id)?.input.side;
      if (side === 'buy' && (bid === null || v.price > bid)) bid = v.price;
      if (side === 'sell' && (ask === null || v.price < ask)) ask = v.price;
    }
    return bid === null || ask === null ? null : bid + ask;
  }

  events(events: readonly BookEvent[], where: string): void {
    for (const e of events) {
      if (e.type === 'rested') {
        this.ledger(e.orderId);
        this.visible.set(e.orderId, { price: e.price, nodes: e.nodes });
      } else if (e.type === 'cancelled') {
        const l = this.ledger(e.orderId);
        assert(l !== undefined, `${where}: cancelled event of an unknown order ${e.orderId}`);
        if (l !== undefined) l.cancelled += e.nodes;
        this.visible.delete(e.orderId);
      } else {
        const b = this.ledger(e.buyOrderId);
        assert(b !== undefined, `${where}: matched event of an unknown buy ${e.buyOrderId}`);
        if (b === undefined) continue;
        const bi = b.input;
        const atMarket =
          bi.type === 'market' &&
          (bi.flexibleWindowHours === undefined || (b.expiresAt !== null && e.at >= b.expiresAt));
        // D14: before its window's end a flexible buy without a limit fills at
        // ≤ R per fill (resting at R), or in a market step on arrival whose
        // average is ≤ R.
        const flexibleEarly = bi.type === 'market' && !atMarket;
        const R = b.R;
        const flexibleMarketStep =
          flexibleEarly && (R === null || e.fills.some((f) => f.price > R));
        if (flexibleMarketStep) {
          const nodes = e.fills.reduce((x, f) => x + f.nodes, 0);
          const value = e.fills.reduce((x, f) => x + f.nodes * f.price, 0);
          assert(
            R !== null && mulDivHalfEven([value], nodes) <= R,
            `${where}: flexible market step of ${e.buyOrderId} averages above R (${R})`,
          );
        }
        const isMarketStep = atMarket || flexibleMarketStep;
        const r2 = isMarketStep ? this.ref2(e.buyOrderId) : null;
        let n = 0;
        for (const f of e.fills) {
          const s = this.ledger(f.sellOrderId);
          assert(s !== undefined, `${where}: fill from an unknown sell ${f.sellOrderId}`);
          if (s === undefined) continue;
          const si = s.input;
          assert(si.side === 'sell', `${where}: fill from a buy`);
          assert(
            si.accountId !== bi.accountId && si.orgId !== bi.orgId,
            `${where}: same-party fill ${e.buyOrderId}/${f.sellOrderId}`,
          );
          assert(
            f.price === si.limitPrice,
            `${where}: fill price ${f.price} is not the sell's limit`,
          );
          assert(f.clusterId === si.clusterId, `${where}: fill clusterId`);
          // D27: the lease starts at max(match, window start) and fits the window
          const w = windowOf(si, s.acceptedAt);
          assert(
            f.leaseStartAt === Math.max(e.at, w.start),
            `${where}: leaseStartAt of ${f.sellOrderId} is ${f.leaseStartAt}`,
          );
          assert(
            f.leaseStartAt + bi.durationHours * HOUR <= w.end,
            `${where}: the lease of ${e.buyOrderId} outlasts the window of ${f.sellOrderId}`,
          );
          if (bi.type === 'limit')
            assert(f.price <= (bi.limitPrice as number), `${where}: fill above the buy's limit`);
          else if (!isMarketStep)
            assert(b.R !== null && f.price <= b.R, `${where}: fill above R (${b.R})`);
          if (isMarketStep && r2 !== null) {
            assert(
              r2 <= 4 * f.price && 4 * f.price <= 3 * r2,
              `${where}: market fill at ${f.price} outside the collar (2r=${r2})`,
            );
          }
          if (si.allOrNothing === true) {
            assert(
              s.filled === 0 && f.nodes === si.nodes && f.sellRemaining === 0,
              `${where}: all-or-nothing sell ${f.sellOrderId} filled in part`,
            );
          }
          s.filled += f.nodes;
          n += f.nodes;
          assert(
            f.sellRemaining === si.nodes - s.filled - s.cancelled,
            `${where}: sellRemaining of ${f.sellOrderId}`,
          );
          const sv = this.visible.get(f.sellOrderId);
          if (sv !== undefined) {
            sv.nodes -= f.nodes;
            if (sv.nodes === 0) this.visible.delete(f.sellOrderId);
          }
          this.last = { price: f.price, gpus: f.nodes * 8, at: e.at };
        }
        b.filled += n;
        assert(
          e.buyRemaining === bi.nodes - b.filled - b.cancelled,
          `${where}: buyRemaining of ${e.buyOrderId}`,
        );
        if (bi.allowPartial !== true)
          assert(b.filled === bi.nodes, `${where}: AON buy ${e.buyOrderId} filled in part`);
        const bv = this.visible.get(e.buyOrderId);
        if (bv !== undefined) {
          bv.nodes -= n;
          if (bv.nodes === 0) this.visible.delete(e.buyOrderId);
        }
      }
    }
    this.flush();
  }

  check(where: string): void {
    const open = this.book.openOrders();
    const openById = new Map(open.map((o) => [o.input.id, o]));
    assert(openById.size === open.length, `${where}: duplicate open ids`);
    // conservation, AON
    for (const [id, l] of this.orders) {
      const rem = openById.get(id)?.remaining ?? 0;
      assert(
        l.filled + l.cancelled + rem === l.input.nodes,
        `${where}: nodes of ${id} not conserved`,
      );
      if (l.input.side === 'buy' && l.input.allowPartial !== true) {
        assert(
          l.filled === 0 || l.filled === l.input.nodes,
          `${where}: AON ${id} filled ${l.filled}`,
        );
      }
    }
    for (const o of open) {
      assert(this.orders.has(o.input.id), `${where}: open order ${o.input.id} never accepted`);
      if (o.input.allOrNothing === true) {
        assert(o.remaining === o.input.nodes, `${where}: all-or-nothing ${o.input.id} in part`);
      }
      // market orders never rest (a flexible one without a limit rests at R)
      if (o.input.type === 'market' && o.input.flexibleWindowHours === undefined) {
        assert(o.state !== 'resting', `${where}: market order ${o.input.id} rests`);
      }
    }
    // the visible book rebuilt from events agrees with openOrders
    const resting = open.filter((o) => o.state === 'resting');
    same(
      new Map(resting.map((o) => [o.input.id, { price: o.price, nodes: o.remaining }])),
      this.visible,
      `${where}: visible book from events`,
    );
    // no fillable cross: no bid that some choice of the asks it may trade
    // with (all-or-nothing ones whole) would fill (D9, D27)
    const t = this.book.clock;
    const asks = resting.filter((o) => o.input.side === 'sell');
    for (const b of resting.filter((o) => o.input.side === 'buy')) {
      const usable = asks.filter(
        (a) =>
          (a.price as number) <= (b.price as number) &&
          b.input.durationHours * HOUR <=
            windowOf(a.input, a.acceptedAt).end -
              Math.max(t, windowOf(a.input, a.acceptedAt).start) &&
          a.input.accountId !== b.input.accountId &&
          a.input.orgId !== b.input.orgId,
      );
      // amounts 0…b.remaining some choice of them adds up to
      const can = Array.from({ length: b.remaining + 1 }, (_, x) => x === 0);
      for (const a of usable) {
        const sizes =
          a.input.allOrNothing === true
            ? [a.remaining]
            : Array.from({ length: a.remaining }, (_, i) => i + 1);
        const before = [...can];
        for (let x = 0; x <= b.remaining; x++) {
          if (before[x] !== true) continue;
          for (const n of sizes) if (x + n <= b.remaining) can[x + n] = true;
        }
      }
      const fillable =
        b.input.allowPartial === true ? can.slice(1).includes(true) : can[b.remaining] === true;
      assert(
        !fillable,
        `${where}: fillable cross: bid ${b.input.id} (${b.remaining} nodes) can be filled from ${usable
          .map(
            (a) => `${a.input.id} (${a.remaining}${a.input.allOrNothing === true ? ' whole' : ''})`,
          )
          .join(', ')}`,
      );
    }
  }
}

// ------------------------------------------------------------------ properties

function compareSequence(commands: readonly Command[]): void {
  const fast: Book = new OrderBook();
  const ref: Book = new NaiveBook();
  const audit = new Auditor(fast);
  commands.forEach((c, i) => {
    const where = `#${i} ${describeCmd(c)}`;
    const f = run(fast, c);
    const r = run(ref, c);
    same(clean(f.result), clean(r.result), `${where}: result`);
    if (c.kind === 'estimate') return;
    if (c.kind === 'place') {
      // timer events come before the order is looked at
      // the ledger must know the order before its own events (after the timers')
      const res = f.result as { ok: boolean; referencePrice?: number };
      if (res.ok) audit.accepted(c.input, res.referencePrice ?? null);
      audit.events(f.events, where);
    } else {
      audit.events(f.events, where);
    }
    expectSameState(fast, ref, where);
    audit.check(where);
  });
}

function compareRestore(commands: readonly Command[], cut: number): void {
  const orig = new OrderBook();
  commands.slice(0, cut).forEach((c) => run(orig, c));
  const restored: Book = OrderBook.restore(orig.openOrders(), orig.lastTrade(), orig.clock);
  expectSameState(restored, orig, `after restore at ${cut}`, true);
  commands.slice(cut).forEach((c, i) => {
    const where = `#${cut + i} ${describeCmd(c)}`;
    const a = run(restored, c);
    const b = run(orig, c);
    same(clean(a.result), clean(b.result), `${where}: result`);
    expectSameState(restored, orig, where, true);
  });
}

const params = { seed: SEED, numRuns: RUNS, verbose: 1 } as const;

/** Lets vitest's worker talk to its parent during long runs. */
const breathe = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe(`OrderBook against NaiveBook (seed ${SEED}, ${RUNS} runs)`, () => {
  it(
    'gives the same results, events, snapshots, open orders and estimates, and keeps the invariants',
    async () => {
      await fc.assert(
        fc.asyncProperty(commandsArb(40, 80), async (commands) => {
          compareSequence(commands);
          await breathe();
        }),
        params,
      );
    },
    TIMEOUT,
  );

  it(
    'restore(openOrders, lastTrade, clock) rebuilds a book that behaves identically',
    async () => {
      await fc.assert(
        fc.asyncProperty(commandsWithCutArb(40, 80), async ({ commands, cut }) => {
          compareRestore(commands, cut);
          await breathe();
        }),
        { ...params, numRuns: Math.max(1, Math.floor(RUNS / 2)) },
      );
    },
    TIMEOUT,
  );
});
