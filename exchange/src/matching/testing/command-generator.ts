// fast-check arbitraries for random command sequences against ONE book
// (property tests of the matching engine, docs/matching.md).
//
// Raw steps are generated (and shrunk) first, then mapped deterministically to
// commands: absolute times from a fixed epoch, ids o1, o2, ... in order, cancels
// resolved to an id placed earlier (or an unknown one). One file of ~540
// lines: each order kind's arbitrary and its mapping sit side by side, so a
// new rule's generator is added in one place.

import fc from 'fast-check';

import type { EstimateQuery, Millis, OrderInput } from '../types.js';

export const EPOCH: Millis = Date.UTC(2025, 0, 1);
const MIN = 60_000;
const HOUR = 3_600_000;

export type Command =
  | { readonly kind: 'place'; readonly now: Millis; readonly input: OrderInput }
  | { readonly kind: 'cancel'; readonly now: Millis; readonly orderId: string }
  | { readonly kind: 'advance'; readonly now: Millis }
  /** A view, not a command: estimate() on both books (pure, no clock change). */
  | { readonly kind: 'estimate'; readonly now: Millis; readonly query: EstimateQuery };

/** 4 accounts in 3 organizations: a1 and a2 share org-a. */
export const ACCOUNTS: readonly { readonly accountId: string; readonly orgId: string }[] = [
  { accountId: 'a1', orgId: 'org-a' },
  { accountId: 'a2', orgId: 'org-a' },
  { accountId: 'a3', orgId: 'org-b' },
  { accountId: 'a4', orgId: 'org-c' },
];

interface RawPlace {
  readonly kind: 'place';
  readonly dt: number;
  readonly side: 'buy' | 'sell';
  readonly account: number;
  readonly market: boolean;
  readonly flexible: number | null;
  readonly allowPartial: boolean;
  /** Sells: all-or-nothing (a resale, D27). */
  readonly allOrNothing: boolean;
  readonly nodes: number;
  readonly hours: number;
  readonly price: number;
  /** ms after now; negative: in the past (counts as now); null: none. */
  readonly startIn: number | null;
  /** ms after now (after startAt for flexible orders is not required); null: none. */
  readonly expiresIn: number | null;
  readonly cluster: number;
  /**
   * Sells: a resale-like window (D27) given by windowStartAt / windowEndAt,
   * or null (the D6 window from startAt).
   */
  readonly window: RawWindow | null;
  /** Rarely: one deliberately invalid field. */
  readonly invalid:
    | 'none'
    | 'nodes0'
    | 'hours0'
    | 'marketSell'
    | 'partialSell'
    | 'noCluster'
    | 'expired'
    | 'aonBuy'
    | 'windowOnBuy'
    | 'windowEmpty'
    | 'windowShort';
}

/**
 * A resale's window (D27): the lease's nodes are offered from windowStartAt
 * (available_from: often ahead, sometimes now or just past) to windowEndAt
 * (the lease end: not a whole number of hours from anything), the order
 * resting from now.
 */
interface RawWindow {
  /** windowStartAt − now, ms. */
  readonly startIn: number;
  /** windowEndAt − windowStartAt = hours h − shortBy ms. */
  readonly hours: number;
  readonly shortBy: number;
  /** All-or-nothing, as a resale is (else a divisible sell with such a window). */
  readonly whole: boolean;
  /** The exchange passes startAt = now; else left out (also now). */
  readonly startNow: boolean;
}

/**
 * Two asks a little apart and, at once, a flexible buy without a limit price
 * for about their total (D14): its R is their average, so whether the market
 * step on arrival fills depends on the rounding of that average, the buy's
 * party, its lease and what else rests. The brief's case is 1 node at 200 and
 * 1 at 240 with a 2-node buy (R = 220).
 */
interface RawFlexLadder {
  readonly kind: 'flexLadder';
  readonly dt: number;
  readonly buyer: number;
  readonly sellers: readonly [number, number];
  readonly nodes: readonly [number, number];
  readonly price: number;
  readonly gap: number;
  /** Added to the asks' total for the buy's nodes. */
  readonly more: number;
  readonly hours: number;
  readonly sellHours: number;
  readonly flexible: number;
  readonly allowPartial: boolean;
  /** ms after now; null: the buy starts at once. */
  readonly startIn: number | null;
}

type Raw =
  | RawPlace
  | RawFlexLadder
  | {
      readonly kind: 'cancel';
      readonly dt: number;
      readonly pick: number;
      readonly unknown: boolean;
    }
  | { readonly kind: 'advance'; readonly dt: number }
  | {
      readonly kind: 'estimate';
      readonly dt: number;
      readonly nodes: number;
      readonly hours: number;
      readonly account: number | null;
      readonly ahead: number;
    };

/** `arb` with probability p, else null (null is the shrink target). */
function maybe<T>(arb: fc.Arbitrary<T>, p: number): fc.Arbitrary<T | null> {
  const w = Math.round(p * 100);
  return fc.oneof({ weight: 100 - w, arbitrary: fc.constant(null) }, { weight: w, arbitrary: arb });
}

/**
 * Time between commands: often none, usually minutes, sometimes a few hours.
 * Rarely negative: a late command whose `now` is before the book's clock (it
 * counts as the clock); time itself does not go back for the next commands.
 */
const dtArb: fc.Arbitrary<number> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(0) },
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 1000 }) },
  { weight: 8, arbitrary: fc.integer({ min: 1, max: 60 }).map((m) => m * MIN) },
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 4 * 60 }).map((m) => m * MIN) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 30 }).map((m) => -m * MIN) },
);

/**
 * Two profiles, chosen per sequence. `wide`: prices 90–160 (sometimes 30–300)
 * so that crossings and collar rejections both happen, 1–48 h buys, 1–72 h
 * sell windows. `dense`: prices 100–112, 2–3 h buys, 3–5 h windows, up to 6
 * nodes: many crossings, all-or-nothing bids passed over and filled from
 * several asks, windows running out.
 */
type Profile = 'wide' | 'dense';

/** Prices in a narrow band so that crossings and collar rejections both happen. */
const priceArb = (p: Profile): fc.Arbitrary<number> =>
  fc.oneof(
    {
      weight: 12,
      arbitrary:
        p === 'dense' ? fc.integer({ min: 100, max: 112 }) : fc.integer({ min: 90, max: 160 }),
    },
    { weight: 1, arbitrary: fc.integer({ min: 30, max: 300 }) },
  );

const buyHoursArb = (p: Profile): fc.Arbitrary<number> =>
  fc.oneof(
    {
      weight: 6,
      arbitrary: p === 'dense' ? fc.integer({ min: 2, max: 3 }) : fc.integer({ min: 1, max: 6 }),
    },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 48 }) },
  );

const sellHoursArb = (p: Profile): fc.Arbitrary<number> =>
  fc.oneof(
    {
      weight: 3,
      arbitrary: p === 'dense' ? fc.integer({ min: 3, max: 5 }) : fc.integer({ min: 1, max: 12 }),
    },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 72 }) },
  );

const rawPlaceArb = (p: Profile): fc.Arbitrary<RawPlace> =>
  fc
    .record({
      dt: dtArb,
      side: fc.constantFrom<'buy' | 'sell'>('buy', 'buy', 'buy', 'sell', 'sell'),
      account: fc.integer({ min: 0, max: ACCOUNTS.length - 1 }),
      market: fc.boolean(),
      flexible: maybe(fc.integer({ min: 1, max: 12 }), 0.15),
      allowPartial: fc.boolean(),
      // all-or-nothing sells (D27): one in six (wide), one in four (dense)
      allOrNothing: fc.integer({ min: 0, max: p === 'dense' ? 3 : 5 }).map((x) => x === 0),
      nodes: fc.oneof(
        { weight: 3, arbitrary: fc.integer({ min: 1, max: p === 'dense' ? 6 : 3 }) },
        { weight: 1, arbitrary: fc.integer({ min: 1, max: 6 }) },
      ),
      buyHours: buyHoursArb(p),
      sellHours: sellHoursArb(p),
      price: priceArb(p),
      startIn: maybe(
        fc.oneof(
          { weight: 4, arbitrary: fc.integer({ min: 1, max: 6 * 60 }).map((m) => m * MIN) },
          { weight: 1, arbitrary: fc.integer({ min: -60, max: 0 }).map((m) => m * MIN) },
        ),
        0.18,
      ),
      expiresIn: maybe(
        fc.oneof(
          { weight: 9, arbitrary: fc.integer({ min: 1, max: 30 * 60 }).map((m) => m * MIN) },
          // Infinity: never expires (a resale's open-ended available_until)
          { weight: 1, arbitrary: fc.constant(Infinity) },
        ),
        0.08,
      ),
      cluster: fc.integer({ min: 0, max: 1 }),
      window: maybe(
        fc.record({
          startIn: fc.oneof(
            { weight: 3, arbitrary: fc.integer({ min: 1, max: 3 * 3600 }).map((x) => x * 1000) },
            { weight: 1, arbitrary: fc.constant(0) },
            { weight: 1, arbitrary: fc.integer({ min: -1800, max: -1 }).map((x) => x * 1000) },
          ),
          hours: fc.integer({ min: 2, max: p === 'dense' ? 5 : 24 }),
          shortBy: fc.oneof(
            fc.integer({ min: 1, max: 59 * 60 }).map((x) => x * 1000),
            fc.integer({ min: 1, max: 3_599_999 }),
          ),
          whole: fc.integer({ min: 0, max: 4 }).map((x) => x !== 0),
          startNow: fc.boolean(),
        }),
        0.15,
      ),
      invalid: fc.oneof(
        { weight: 60, arbitrary: fc.constant<'none'>('none') },
        {
          weight: 1,
          arbitrary: fc.constantFrom<RawPlace['invalid']>(
            'nodes0',
            'hours0',
            'marketSell',
            'partialSell',
            'noCluster',
            'expired',
            'aonBuy',
            'windowOnBuy',
            'windowEmpty',
            'windowShort',
          ),
        },
      ),
    })
    .map((r): RawPlace => ({
      kind: 'place',
      dt: r.dt,
      side: r.side,
      account: r.account,
      // a quarter of the buys are market orders; sells are limit orders
      market: r.side === 'buy' && r.market && r.price % 2 === 0,
      flexible: r.side === 'buy' ? r.flexible : null,
      allowPartial: r.side === 'buy' && r.allowPartial,
      allOrNothing: r.side === 'sell' && r.allOrNothing,
      // an all-or-nothing node is divisible anyway: mostly 2 or more
      nodes:
        r.side === 'sell' && r.allOrNothing && r.nodes === 1 && r.price % 4 !== 0 ? 2 : r.nodes,
      hours: r.side === 'buy' ? r.buyHours : r.sellHours,
      price: r.price,
      startIn: r.startIn,
      expiresIn: r.expiresIn,
      cluster: r.cluster,
      window: r.side === 'sell' ? r.window : null,
      invalid: r.invalid,
    }));

const flexLadderArb = (p: Profile): fc.Arbitrary<RawFlexLadder> =>
  fc.record({
    kind: fc.constant<'flexLadder'>('flexLadder'),
    dt: dtArb,
    buyer: fc.integer({ min: 0, max: ACCOUNTS.length - 1 }),
    sellers: fc.tuple(
      fc.integer({ min: 0, max: ACCOUNTS.length - 1 }),
      fc.integer({ min: 0, max: ACCOUNTS.length - 1 }),
    ),
    nodes: fc.oneof(
      fc.constant<[number, number]>([1, 1]),
      fc.tuple(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 3 })),
    ),
    price: fc.oneof(fc.constant(200), priceArb(p)),
    gap: fc.oneof(fc.constant(40), fc.integer({ min: 0, max: 15 })),
    more: fc.oneof(
      { weight: 4, arbitrary: fc.constant(0) },
      { weight: 1, arbitrary: fc.integer({ min: -1, max: 1 }) },
    ),
    hours: buyHoursArb(p),
    sellHours: sellHoursArb(p),
    flexible: fc.integer({ min: 1, max: 6 }),
    allowPartial: fc.boolean(),
    startIn: maybe(
      fc.integer({ min: 1, max: 3 * 60 }).map((m) => m * MIN),
      0.25,
    ),
  });

const rawArb = (p: Profile): fc.Arbitrary<Raw> =>
  fc.oneof(
    { weight: 14, arbitrary: rawPlaceArb(p) },
    { weight: 1, arbitrary: flexLadderArb(p) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant<'cancel'>('cancel'),
        dt: dtArb,
        pick: fc.nat({ max: 1000 }),
        unknown: fc.integer({ min: 0, max: 4 }).map((x) => x === 0),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant<'advance'>('advance'),
        dt: fc.oneof(
          fc.integer({ min: 1, max: 120 }).map((m) => m * MIN),
          fc.integer({ min: 1, max: 24 * 60 }).map((m) => m * MIN),
        ),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant<'estimate'>('estimate'),
        dt: fc.constant(0),
        nodes: fc.integer({ min: 1, max: 8 }),
        hours: buyHoursArb(p),
        account: maybe(fc.integer({ min: 0, max: ACCOUNTS.length - 1 }), 0.5),
        ahead: fc.oneof(
          fc.constant(0),
          fc.integer({ min: 0, max: 3 * 60 }).map((m) => m * MIN),
        ),
      }),
    },
  );

function toInput(r: RawPlace, id: string, now: Millis): OrderInput {
  const who = ACCOUNTS[r.account] ?? { accountId: 'a1', orgId: 'org-a' };
  const isBuy = r.side === 'buy';
  const limit = !(isBuy && r.market);
  const input: {
    -readonly [K in keyof OrderInput]: OrderInput[K];
  } = {
    id,
    side: r.side,
    type: limit ? 'limit' : 'market',
    accountId: who.accountId,
    orgId: who.orgId,
    nodes: r.nodes,
    durationHours: r.hours,
  };
  if (limit) input.limitPrice = r.price;
  if (isBuy && r.allowPartial) input.allowPartial = true;
  if (!isBuy && r.allOrNothing) input.allOrNothing = true;
  if (isBuy && r.flexible !== null) input.flexibleWindowHours = r.flexible;
  if (r.startIn !== null) input.startAt = now + r.startIn;
  if (r.expiresIn !== null) input.expiresAt = now + r.expiresIn;
  if (!isBuy) input.clusterId = `cl-${who.accountId}-${r.cluster}`;
  const w = r.window;
  if (w !== null) {
    // D27: a resale rests from now; its window is [available_from, lease end]
    delete input.startAt;
    if (w.startNow) input.startAt = now;
    if (w.whole) input.allOrNothing = true;
    input.windowStartAt = now + w.startIn;
    input.windowEndAt = input.windowStartAt + w.hours * HOUR - w.shortBy;
  }
  switch (r.invalid) {
    case 'none':
      break;
    case 'nodes0':
      input.nodes = 0;
      break;
    case 'hours0':
      input.durationHours = 0;
      break;
    case 'marketSell':
      if (!isBuy) {
        input.type = 'market';
        delete input.limitPrice;
      } else input.limitPrice = r.price; // a market buy with a limit price, or a harmless limit buy
      break;
    case 'partialSell':
      input.allowPartial = true;
      if (isBuy) input.flexibleWindowHours = 0;
      break;
    case 'noCluster':
      delete input.clusterId;
      if (isBuy) input.id = '';
      break;
    case 'expired':
      input.expiresAt = now - (r.expiresIn ?? 0);
      break;
    case 'aonBuy':
      // all-or-nothing applies to sells only; on a sell, false is harmless
      input.allOrNothing = isBuy;
      break;
    case 'windowOnBuy':
      // a window applies to sells only; on a sell, a 2 h window from now is fine
      input.windowStartAt = now;
      input.windowEndAt = now + 2 * HOUR;
      break;
    case 'windowEmpty':
      input.windowStartAt = now + (w?.startIn ?? 0);
      input.windowEndAt = input.windowStartAt - (w?.shortBy ?? 0);
      break;
    case 'windowShort':
      // under 1 h from when its time is first usable
      input.windowStartAt = now + Math.max(0, w?.startIn ?? 0);
      input.windowEndAt = input.windowStartAt + HOUR - 1;
      break;
  }
  return input;
}

/** Raw steps → commands, deterministically. */
export function toCommands(raws: readonly Raw[]): Command[] {
  let time = EPOCH;
  let n = 0;
  const ids: string[] = [];
  const out: Command[] = [];
  for (const r of raws) {
    if (r.dt > 0) time += r.dt;
    // a late command (dt < 0) carries a `now` before the clock
    const now = r.dt < 0 ? Math.max(EPOCH, time + r.dt) : time;
    switch (r.kind) {
      case 'place': {
        const id = `o${++n}`;
        out.push({ kind: 'place', now, input: toInput(r, id, now) });
        ids.push(id);
        break;
      }
      case 'cancel': {
        const id =
          r.unknown || ids.length === 0
            ? `o-unknown-${r.pick}`
            : (ids[ids.length - 1 - (r.pick % Math.min(ids.length, 12))] as string);
        out.push({ kind: 'cancel', now, orderId: id });
        break;
      }
      case 'advance':
        out.push({ kind: 'advance', now });
        break;
      case 'flexLadder': {
        for (const k of [0, 1] as const) {
          const who = ACCOUNTS[r.sellers[k]] ?? { accountId: 'a1', orgId: 'org-a' };
          const id = `o${++n}`;
          out.push({
            kind: 'place',
            now,
            input: {
              id,
              side: 'sell',
              type: 'limit',
              ...who,
              nodes: r.nodes[k],
              durationHours: r.sellHours,
              limitPrice: r.price + k * r.gap,
              clusterId: `cl-${who.accountId}-${k}`,
            },
          });
          ids.push(id);
        }
        const id = `o${++n}`;
        const who = ACCOUNTS[r.buyer] ?? { accountId: 'a1', orgId: 'org-a' };
        out.push({
          kind: 'place',
          now,
          input: {
            id,
            side: 'buy',
            type: 'market',
            ...who,
            nodes: Math.max(1, r.nodes[0] + r.nodes[1] + r.more),
            durationHours: r.hours,
            flexibleWindowHours: r.flexible,
            ...(r.allowPartial ? { allowPartial: true } : {}),
            ...(r.startIn === null ? {} : { startAt: now + r.startIn }),
          },
        });
        ids.push(id);
        break;
      }
      case 'estimate': {
        const who = r.account === null ? undefined : ACCOUNTS[r.account];
        out.push({
          kind: 'estimate',
          now: now + r.ahead,
          query: {
            nodes: r.nodes,
            durationHours: r.hours,
            ...(who === undefined ? {} : { accountId: who.accountId, orgId: who.orgId }),
          },
        });
        break;
      }
    }
  }
  return out;
}

function rawsArb(minLength: number, maxLength: number): fc.Arbitrary<Raw[]> {
  return fc.oneof(
    { weight: 2, arbitrary: fc.array(rawArb('wide'), { minLength, maxLength }) },
    { weight: 1, arbitrary: fc.array(rawArb('dense'), { minLength, maxLength }) },
  );
}

/** A sequence of commands for one book, `minLength`…`maxLength` long. */
export function commandsArb(minLength = 40, maxLength = 80): fc.Arbitrary<Command[]> {
  return rawsArb(minLength, maxLength).map(toCommands);
}

/** A sequence and a cut point in it (for the restore property). */
export function commandsWithCutArb(
  minLength = 40,
  maxLength = 80,
): fc.Arbitrary<{ commands: Command[]; cut: number }> {
  return fc
    .tuple(rawsArb(minLength, maxLength), fc.double({ min: 0, max: 1, noNaN: true }))
    .map(([raws, f]) => {
      const commands = toCommands(raws);
      return { commands, cut: Math.floor(f * commands.length) };
    });
}
