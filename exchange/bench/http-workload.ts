// The order schedule of the HTTP bench: every order of every phase drawn in
// advance from a seeded PRNG (side, book, size, duration, party, price offset),
// stored column-wise. What is decided only at send time is what depends on
// the book: whether a buy that may go at market does (enough asks?). Sells
// are fixed in advance, so the nodes each provider cluster needs are known
// before the exchange is onboarded: the bench creates exactly that capacity
// (plus a margin), and `insufficient_capacity` never fires.

import { GPUS_PER_NODE } from '@gpux/shared';
import type { GpuType, Zone } from '@gpux/shared';

import { Rng } from './order-stream.js';

export interface BookSpec {
  readonly gpuType: GpuType;
  readonly zone: Zone;
  /** Cents per GPU-hour around which orders are priced. */
  readonly midCents: number;
  /** Share of the orders that go to this book. */
  readonly weight: number;
}

/** Four books of the twelve; h100 in us-west-1 is the busiest. */
export const BOOKS: readonly BookSpec[] = [
  { gpuType: 'h100', zone: 'us-west-1', midCents: 200, weight: 0.4 },
  { gpuType: 'h100', zone: 'us-east-1', midCents: 205, weight: 0.2 },
  { gpuType: 'h200', zone: 'us-west-1', midCents: 260, weight: 0.2 },
  { gpuType: 'b200', zone: 'eu-west-1', midCents: 340, weight: 0.2 },
];

export const BUY = 0;
export const SELL = 1;

/** Admin API limit on nodes per cluster (POST /v1/admin/clusters). */
export const MAX_CLUSTER_NODES = 1000;
/** Nodes planned per cluster; the rest up to MAX_CLUSTER_NODES is margin. */
const PLANNED_CLUSTER_NODES = 980;

/** Share of the orders that are sells. Sells average 2.5 nodes, buys 1.5: 0.375 balances GPUs. */
const SELL_SHARE = 0.375;
/** Share of the buys that go at market when the book has the asks for them. */
const MARKET_SHARE = 0.1;
/** Share of the limit buys that allow partial fills (D9); the rest are all-or-nothing. */
const PARTIAL_SHARE = 0.25;
/** Share of the orders priced to cross the spread. */
const CROSSING_SHARE = 0.5;
/** Prices are the book's mid ± 1 … MAX_OFFSET_CENTS. */
export const MAX_OFFSET_CENTS = 5;

export interface PhaseSpec {
  readonly name: string;
  /** Orders per second. */
  readonly rate: number;
  readonly seconds: number;
  /** false: a warm-up, not reported. */
  readonly measured: boolean;
}

export interface Phase extends PhaseSpec {
  /** Index of the phase's first order in the schedule. */
  readonly first: number;
  readonly count: number;
}

/** One provider cluster the schedule needs: who owns it, in which book, how many nodes. */
export interface ClusterPlan {
  readonly provider: number;
  readonly book: number;
  /** Nodes to create: what the sells offer, plus a margin. */
  nodes: number;
  /** Nodes the scheduled sells offer. */
  offered: number;
}

export interface Schedule {
  readonly seed: number;
  readonly phases: readonly Phase[];
  readonly length: number;
  /** Index into BOOKS. */
  readonly book: Uint8Array;
  /** BUY or SELL. */
  readonly side: Uint8Array;
  readonly nodes: Uint8Array;
  readonly hours: Uint16Array;
  /** Buys: index of the buyer; sells: index of the provider. */
  readonly party: Uint16Array;
  /** Sells: index into `clusters`; buys: -1. */
  readonly cluster: Int32Array;
  /** Cents away from the mid, 1 … MAX_OFFSET_CENTS. */
  readonly offset: Uint8Array;
  /** 1: priced on the far side of the mid (to cross), 0: on its own side (to rest). */
  readonly crossing: Uint8Array;
  /** Buys: 1 may go at market (if the book has the asks). */
  readonly market: Uint8Array;
  /** Limit buys: 1 allow_partial true. */
  readonly partial: Uint8Array;
  readonly clusters: readonly ClusterPlan[];
  readonly providers: number;
  readonly buyers: number;
  readonly sells: number;
  readonly sellNodes: number;
}

/**
 * Draws the whole schedule. Providers each have an organization of their own;
 * buyers come two to an organization, none shared with a provider, so
 * self-trade prevention (D17) never fires.
 */
export function makeSchedule(
  specs: readonly PhaseSpec[],
  seed: number,
  providers: number,
  buyers: number,
): Schedule {
  const phases: Phase[] = [];
  let length = 0;
  for (const s of specs) {
    const count = Math.round(s.rate * s.seconds);
    phases.push({ ...s, first: length, count });
    length += count;
  }
  const rng = new Rng(seed);
  const book = new Uint8Array(length);
  const side = new Uint8Array(length);
  const nodes = new Uint8Array(length);
  const hours = new Uint16Array(length);
  const party = new Uint16Array(length);
  const cluster = new Int32Array(length).fill(-1);
  const offset = new Uint8Array(length);
  const crossing = new Uint8Array(length);
  const market = new Uint8Array(length);
  const partial = new Uint8Array(length);
  const clusters: ClusterPlan[] = [];
  /** `${provider}/${book}` → the cluster being filled. */
  const current = new Map<string, number>();
  let sells = 0;
  let sellNodes = 0;

  for (let i = 0; i < length; i++) {
    book[i] = pickBook(rng.next());
    offset[i] = rng.int(1, MAX_OFFSET_CENTS);
    crossing[i] = rng.chance(CROSSING_SHARE) ? 1 : 0;
    if (rng.chance(SELL_SHARE)) {
      // Sells: 8 … 32 GPUs, a window of 24 … 72 h starting now.
      const n = rng.int(1, 4);
      const p = rng.int(0, providers - 1);
      side[i] = SELL;
      nodes[i] = n;
      hours[i] = rng.int(24, 72);
      party[i] = p;
      const key = `${p}/${book[i] ?? 0}`;
      let c = current.get(key);
      const plan = c === undefined ? undefined : clusters[c];
      if (c === undefined || plan === undefined || plan.offered + n > PLANNED_CLUSTER_NODES) {
        c = clusters.length;
        clusters.push({ provider: p, book: book[i] ?? 0, nodes: 0, offered: 0 });
        current.set(key, c);
      }
      const target = clusters[c];
      if (target !== undefined) target.offered += n;
      cluster[i] = c;
      sells++;
      sellNodes += n;
    } else {
      // Buys: 8 … 16 GPUs for 1 … 24 h.
      side[i] = BUY;
      nodes[i] = rng.int(1, 2);
      hours[i] = rng.int(1, 24);
      party[i] = rng.int(0, buyers - 1);
      market[i] = rng.chance(MARKET_SHARE) ? 1 : 0;
      partial[i] = rng.chance(PARTIAL_SHARE) ? 1 : 0;
    }
  }
  for (const c of clusters) {
    c.nodes = Math.min(MAX_CLUSTER_NODES, Math.ceil(c.offered * 1.02) + 2);
  }
  return {
    seed,
    phases,
    length,
    book,
    side,
    nodes,
    hours,
    party,
    cluster,
    offset,
    crossing,
    market,
    partial,
    clusters,
    providers,
    buyers,
    sells,
    sellNodes,
  };
}

function pickBook(u: number): number {
  let acc = 0;
  for (let b = 0; b < BOOKS.length; b++) {
    acc += BOOKS[b]?.weight ?? 0;
    if (u < acc) return b;
  }
  return BOOKS.length - 1;
}

/** What the bench knows of each book from the answers it got: resting ask nodes. */
export class BookEstimate {
  /** Ask nodes resting (estimated), per book. */
  private readonly asks = new Float64Array(BOOKS.length);
  /** Ask nodes that market buys in flight may take, per book. */
  private readonly reserved = new Float64Array(BOOKS.length);

  /**
   * Whether a market buy of `nodes` should go now: the book must have the
   * asks for it with a margin for the buys in flight. If so, reserves them.
   */
  tryReserve(book: number, nodes: number, margin: number): boolean {
    const free = (this.asks[book] ?? 0) - (this.reserved[book] ?? 0);
    if (free < nodes + margin) return false;
    this.reserved[book] = (this.reserved[book] ?? 0) + nodes;
    return true;
  }

  release(book: number, nodes: number): void {
    this.reserved[book] = (this.reserved[book] ?? 0) - nodes;
  }

  /** A sell was accepted: what it did not fill at once rests. */
  sold(book: number, gpus: number, filledGpus: number): void {
    this.asks[book] = (this.asks[book] ?? 0) + (gpus - filledGpus) / GPUS_PER_NODE;
  }

  /** A buy was accepted: what it filled at once came from the asks. */
  bought(book: number, filledGpus: number): void {
    this.asks[book] = (this.asks[book] ?? 0) - filledGpus / GPUS_PER_NODE;
  }

  askNodes(book: number): number {
    return this.asks[book] ?? 0;
  }
}
