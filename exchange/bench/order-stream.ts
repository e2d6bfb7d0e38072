// Seeded, reproducible command streams for the matching-engine bench. A stream
// is stored column-wise in typed arrays (plus one shared id string per order),
// so a million commands cost a few tens of MB and the engines under test build
// their own input objects from the same columns inside the measured loop.

/** mulberry32: a tiny, fast 32-bit PRNG; good enough for load generation. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Uniform integer in [lo, hi], both included. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }
}

export const PLACE = 0;
export const CANCEL = 1;
export const BUY = 0;
export const SELL = 1;
export const LIMIT = 0;
export const MARKET = 1;

/** Fixed start of the book clock so streams are reproducible: 2026-11-22T00:00Z. */
export const T0 = Date.UTC(2026, 10, 22);
const HOUR = 3_600_000;

export interface OrderStream {
  readonly name: string;
  readonly seed: number;
  readonly length: number;
  /** The book clock of command i is `T0 + i * stepMs`. */
  readonly stepMs: number;
  /** PLACE or CANCEL. */
  readonly kind: Uint8Array;
  /** BUY or SELL (places). */
  readonly side: Uint8Array;
  /** LIMIT or MARKET (places). */
  readonly type: Uint8Array;
  readonly nodes: Uint16Array;
  readonly durationHours: Uint16Array;
  /** Integer cents; 0 for a market order. */
  readonly price: Int32Array;
  /** Index into accounts / orgs / clusters. */
  readonly party: Uint16Array;
  /** Buys: 1 allowPartial true, 0 left out (all-or-nothing, D9). */
  readonly allowPartial: Uint8Array;
  /** startAt − now in ms; 0: no startAt (starts now). */
  readonly startDelayMs: Uint32Array;
  /** Buys: flexibleWindowHours, 0 none. */
  readonly flexHours: Uint16Array;
  /**
   * Sells: a resale (D27) when > 0: all-or-nothing, resting from now, its
   * window from now + resaleStartMs for resaleWindowMs (not whole hours).
   */
  readonly resaleWindowMs: Uint32Array;
  readonly resaleStartMs: Uint32Array;
  /** Cancels: the command index of the order cancelled. */
  readonly target: Int32Array;
  /** Places: the order id ('' for cancels). */
  readonly ids: string[];
  readonly accounts: readonly string[];
  readonly orgs: readonly string[];
  readonly clusters: readonly string[];
  /** true: every place passes expiresAt: Infinity; false: D12 defaults. */
  readonly neverExpire: boolean;
  readonly places: number;
  readonly cancels: number;
}

interface Columns {
  kind: Uint8Array;
  side: Uint8Array;
  type: Uint8Array;
  nodes: Uint16Array;
  durationHours: Uint16Array;
  price: Int32Array;
  party: Uint16Array;
  allowPartial: Uint8Array;
  startDelayMs: Uint32Array;
  flexHours: Uint16Array;
  resaleWindowMs: Uint32Array;
  resaleStartMs: Uint32Array;
  target: Int32Array;
  ids: string[];
}

function columns(n: number): Columns {
  return {
    kind: new Uint8Array(n),
    side: new Uint8Array(n),
    type: new Uint8Array(n),
    nodes: new Uint16Array(n),
    durationHours: new Uint16Array(n),
    price: new Int32Array(n),
    party: new Uint16Array(n),
    allowPartial: new Uint8Array(n),
    startDelayMs: new Uint32Array(n),
    flexHours: new Uint16Array(n),
    resaleWindowMs: new Uint32Array(n),
    resaleStartMs: new Uint32Array(n),
    target: new Int32Array(n).fill(-1),
    ids: new Array<string>(n).fill(''),
  };
}

/**
 * Ids of earlier orders a cancel may pick. Unordered, swap-remove: O(1) add and
 * pick. The generator does not simulate matching, so a picked order may have
 * filled meanwhile; both engines then answer not-found, and the bench counts it.
 */
class CancelPool {
  private items: Int32Array;
  private size = 0;

  constructor(capacity: number) {
    this.items = new Int32Array(Math.max(16, capacity));
  }

  add(i: number): void {
    if (this.size === this.items.length) {
      const grown = new Int32Array(this.items.length * 2);
      grown.set(this.items);
      this.items = grown;
    }
    this.items[this.size++] = i;
  }

  /**
   * A random member, removed; -1 when empty. Half the time one of the `recent`
   * latest (recent orders near the mid are the likelier to be still open),
   * else any (old orders far from the mid wait long: cancelling them keeps the
   * book from growing without bound).
   */
  take(rng: Rng, recent: number): number {
    if (this.size === 0) return -1;
    const window = rng.chance(0.5) ? Math.min(this.size, recent) : this.size;
    const j = this.size - 1 - rng.int(0, window - 1);
    const v = this.items[j] ?? -1;
    this.items[j] = this.items[--this.size] ?? -1;
    return v;
  }
}

const MID = 20_000; // cents per GPU-hour
/** Cancels pick among the latest this many cancellable orders. */
const CANCEL_WINDOW = 1000;

/**
 * The plain stream: divisible limit orders only, as any generic limit order
 * book understands them.
 *
 * - Half buys, half sells; about half of the orders cross (a buy priced up to
 *   2.5 % above the mid, where the best asks sit; a sell as far below), the
 *   rest rest 1 … 250 cents away from the mid on their own side. Prices stay in
 *   mid ± 2.5 %, far inside the ±50 % collar (D15).
 * - 1 … 8 nodes; buys 1 … 8 h with allowPartial, sells with a 720 h window,
 *   so every sell fits every buy for the whole run (1 ms per command).
 * - Buyers and sellers come from two disjoint sets of 200 accounts, each in its
 *   own organization: a buy never meets an ask of its own party, so self-trade
 *   prevention (D17) never fires.
 * - ~10 % of the commands cancel an earlier resting-priced order.
 * - Every order passes expiresAt: Infinity (nothing expires).
 */
export function plainStream(n: number, seed: number): OrderStream {
  const rng = new Rng(seed);
  const c = columns(n);
  const pool = new CancelPool(n >>> 2);
  const PARTIES = 200;
  let places = 0;
  let cancels = 0;
  for (let i = 0; i < n; i++) {
    if (i > 0 && rng.chance(0.1)) {
      const t = pool.take(rng, CANCEL_WINDOW);
      if (t >= 0) {
        c.kind[i] = CANCEL;
        c.target[i] = t;
        cancels++;
        continue;
      }
    }
    places++;
    const buy = rng.chance(0.5);
    const crossing = rng.chance(0.5);
    const away = rng.int(1, 250);
    c.kind[i] = PLACE;
    c.side[i] = buy ? BUY : SELL;
    c.type[i] = LIMIT;
    c.nodes[i] = rng.int(1, 8);
    c.ids[i] = `p${i}`;
    if (buy) {
      c.durationHours[i] = rng.int(1, 8);
      c.price[i] = crossing ? MID + away - 1 : MID - away;
      c.party[i] = rng.int(0, PARTIES - 1);
      c.allowPartial[i] = 1;
    } else {
      c.durationHours[i] = 720;
      c.price[i] = crossing ? MID - away + 1 : MID + away;
      c.party[i] = PARTIES + rng.int(0, PARTIES - 1);
    }
    if (!crossing) pool.add(i);
  }
  const parties = 2 * PARTIES;
  return {
    name: 'plain',
    seed,
    length: n,
    stepMs: 1,
    ...c,
    accounts: names('acct-', parties),
    orgs: names('org-', parties),
    clusters: names('cluster-', parties),
    neverExpire: true,
    places,
    cancels,
  };
}

/**
 * The all-rules stream, for our engine only: what the exchange really sees.
 *
 * - 20 organizations × 5 accounts, buying and selling, so some buys and sells
 *   meet their own party (D17: `self_trade_prevented`).
 * - Buys: 15 % market; 80 % all-or-nothing (D9), 20 % allowPartial; 1 … 8 nodes;
 *   1 … 72 h; 3 % flexible (1 … 24 h window, half of them without a limit
 *   price, D14); 5 % with a startAt 1 min … 6 h ahead (D13).
 * - Sells: windows of 24 … 720 h, 10 % starting 1 min … 6 h ahead, so as time
 *   passes some sells no longer fit long buys (D6). 3 % are resales (D27):
 *   all-or-nothing, resting at once, their window from 0 … 2 h ahead to
 *   2 … 72 h later less 0 … 59 min (a lease's end).
 * - Prices as in the plain stream (half crossing, mid ± 2.5 %).
 * - No expiresAt: D12 defaults (limit buys 24 h, sells at their window's end).
 * - The clock advances 1 s per command (a million commands ≈ 11.6 days), so
 *   expiries and scheduled arrivals fire during the run.
 * - ~10 % of the commands cancel an earlier order.
 */
export function allRulesStream(n: number, seed: number): OrderStream {
  const rng = new Rng(seed);
  const c = columns(n);
  const pool = new CancelPool(n >>> 2);
  const ORGS = 20;
  const PER_ORG = 5;
  const parties = ORGS * PER_ORG;
  let places = 0;
  let cancels = 0;
  for (let i = 0; i < n; i++) {
    if (i > 0 && rng.chance(0.1)) {
      const t = pool.take(rng, CANCEL_WINDOW);
      if (t >= 0) {
        c.kind[i] = CANCEL;
        c.target[i] = t;
        cancels++;
        continue;
      }
    }
    places++;
    const buy = rng.chance(0.5);
    const crossing = rng.chance(0.5);
    const away = rng.int(1, 250);
    c.kind[i] = PLACE;
    c.side[i] = buy ? BUY : SELL;
    c.nodes[i] = rng.int(1, 8);
    c.party[i] = rng.int(0, parties - 1);
    c.ids[i] = `r${i}`;
    if (buy) {
      c.durationHours[i] = rng.int(1, 72);
      c.allowPartial[i] = rng.chance(0.2) ? 1 : 0;
      const flexible = rng.chance(0.03);
      if (flexible) c.flexHours[i] = rng.int(1, 24);
      const market = flexible ? rng.chance(0.5) : rng.chance(0.15);
      c.type[i] = market ? MARKET : LIMIT;
      c.price[i] = market ? 0 : crossing ? MID + away - 1 : MID - away;
      if (rng.chance(0.05)) c.startDelayMs[i] = rng.int(60_000, 6 * HOUR);
      // Market buys never rest; only limit ones are worth cancelling.
      if (!market || flexible) pool.add(i);
    } else {
      c.type[i] = LIMIT;
      c.durationHours[i] = rng.int(24, 720);
      c.price[i] = crossing ? MID - away + 1 : MID + away;
      if (rng.chance(0.03)) {
        const windowMs = rng.int(2, 72) * HOUR - rng.int(0, HOUR - 1);
        c.resaleStartMs[i] = rng.int(0, 2 * HOUR);
        c.resaleWindowMs[i] = windowMs;
        c.durationHours[i] = Math.ceil(windowMs / HOUR);
      } else if (rng.chance(0.1)) c.startDelayMs[i] = rng.int(60_000, 6 * HOUR);
      pool.add(i);
    }
  }
  const accounts: string[] = [];
  const orgs: string[] = [];
  for (let p = 0; p < parties; p++) {
    const org = Math.floor(p / PER_ORG);
    accounts.push(`acct-${org}-${p % PER_ORG}`);
    orgs.push(`org-${org}`);
  }
  return {
    name: 'all-rules',
    seed,
    length: n,
    stepMs: 1000,
    ...c,
    accounts,
    orgs,
    clusters: names('cluster-', parties),
    neverExpire: false,
    places,
    cancels,
  };
}

function names(prefix: string, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(`${prefix}${i}`);
  return out;
}
