import type { OrderRec } from './order-rec.js';
import { PriceLevel } from './price-level.js';

/**
 * One side of a book: price levels sorted so that the best is LAST (a filled
 * best level leaves with a pop, and the levels near the best, where nearly all
 * activity is, sit at the cheap end of a splice), plus a map for O(1) lookup.
 */
export class BookSide {
  /** Bids ascending, asks descending: best at the end. */
  readonly levels: PriceLevel[] = [];
  private readonly byPrice = new Map<number, PriceLevel>();
  /**
   * All-or-nothing orders resting here (asks only, D27). While there are none
   * the book plans every walk the plain way (docs/matching.md, "Choosing the
   * fills").
   */
  aon = 0;
  /**
   * Prices whose level changed (an order joined, left or was filled in
   * part), repeats included, while someone keeps count (the live feed,
   * feed/book-feed.ts); null: nobody does, and nothing is recorded.
   */
  changed: number[] | null = null;

  constructor(readonly isBid: boolean) {}

  /** The level at `price`, if any order rests there. */
  at(price: number): PriceLevel | undefined {
    return this.byPrice.get(price);
  }

  best(): PriceLevel | undefined {
    return this.levels[this.levels.length - 1];
  }

  /** True when price a comes before price b in this side's priority. */
  better(a: number, b: number): boolean {
    return this.isBid ? a > b : a < b;
  }

  append(o: OrderRec): void {
    let level = this.byPrice.get(o.price);
    if (level === undefined) {
      level = new PriceLevel(o.price);
      this.byPrice.set(o.price, level);
      this.insertLevel(level);
    }
    level.append(o);
    if (o.allOrNothing) this.aon++;
    this.changed?.push(o.price);
  }

  remove(o: OrderRec): void {
    const level = o.level;
    if (level === null) return;
    level.unlink(o);
    if (o.allOrNothing) this.aon--;
    if (level.count === 0) this.dropLevel(level);
    this.changed?.push(level.price);
  }

  /** Take `nodes` from a resting order; unlinks it when it has none left. */
  reduce(o: OrderRec, nodes: number): void {
    const level = o.level;
    if (level === null) return;
    o.remaining -= nodes;
    level.nodes -= nodes;
    this.changed?.push(level.price);
    if (o.remaining === 0) {
      level.unlink(o);
      if (o.allOrNothing) this.aon--;
      if (level.count === 0) this.dropLevel(level);
    } else if (o.allOrNothing) {
      throw new Error(`all-or-nothing order ${o.id} filled in part`);
    }
  }

  private insertLevel(level: PriceLevel): void {
    const levels = this.levels;
    const n = levels.length;
    // Most new levels are at or next to the best: check the end first.
    const last = levels[n - 1];
    if (last === undefined || this.better(level.price, last.price)) {
      levels.push(level);
      return;
    }
    // Binary search for the first level the new one is not better than:
    // the array runs worst to best.
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.better(level.price, (levels[mid] as PriceLevel).price)) lo = mid + 1;
      else hi = mid;
    }
    levels.splice(lo, 0, level);
  }

  private dropLevel(level: PriceLevel): void {
    this.byPrice.delete(level.price);
    const levels = this.levels;
    const n = levels.length;
    if (levels[n - 1] === level) {
      levels.pop();
      return;
    }
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const p = (levels[mid] as PriceLevel).price;
      if (p === level.price) {
        levels.splice(mid, 1);
        return;
      }
      if (this.better(level.price, p)) lo = mid + 1;
      else hi = mid;
    }
  }
}
