import type { OrderRec } from './order-rec.js';

export const EXPIRY = 0;
export const ARRIVAL = 1;

/**
 * Due times of expiries and scheduled arrivals, a binary min-heap ordered by
 * (time, expiries before arrivals, acceptance order) as docs/matching.md
 * requires. Entries are not removed when their order goes away; they are
 * checked and dropped when they come due.
 */
export class TimerHeap {
  private readonly times: number[] = [];
  private readonly kinds: number[] = [];
  private readonly orders: OrderRec[] = [];

  get size(): number {
    return this.times.length;
  }

  /** Due time of the first entry; Infinity when empty. */
  peekTime(): number {
    return this.times.length === 0 ? Infinity : (this.times[0] as number);
  }

  push(time: number, kind: number, order: OrderRec): void {
    const { times, kinds, orders } = this;
    let i = times.length;
    times.push(time);
    kinds.push(kind);
    orders.push(order);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  /** Remove the first entry; the caller read it with first*(). */
  pop(): void {
    const { times, kinds, orders } = this;
    if (times.length === 0) return;
    const last = times.length - 1;
    this.swap(0, last);
    times.pop();
    kinds.pop();
    orders.pop();
    this.siftDown(0);
  }

  private siftDown(start: number): void {
    let i = start;
    const n = this.times.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && this.less(r, l) ? r : l;
      if (!this.less(c, i)) break;
      this.swap(c, i);
      i = c;
    }
  }

  /**
   * Drop the entries of orders that are done. Done orders stay referenced
   * here until their due time (a filled sell's expiry may be 30 days away),
   * which would keep them alive for the garbage collector; the book calls
   * this when most entries are dead, so the O(n) rebuild is amortized O(1).
   */
  dropDone(isDone: (o: OrderRec) => boolean): void {
    const { times, kinds, orders } = this;
    let n = 0;
    for (let i = 0; i < times.length; i++) {
      const o = orders[i] as OrderRec;
      if (isDone(o)) continue;
      times[n] = times[i] as number;
      kinds[n] = kinds[i] as number;
      orders[n] = o;
      n++;
    }
    times.length = kinds.length = orders.length = n;
    for (let i = (n >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  firstKind(): number {
    return this.kinds[0] as number;
  }

  firstOrder(): OrderRec {
    return this.orders[0] as OrderRec;
  }

  private less(a: number, b: number): boolean {
    const ta = this.times[a] as number;
    const tb = this.times[b] as number;
    if (ta !== tb) return ta < tb;
    const ka = this.kinds[a] as number;
    const kb = this.kinds[b] as number;
    if (ka !== kb) return ka < kb;
    return (this.orders[a] as OrderRec).acceptSeq < (this.orders[b] as OrderRec).acceptSeq;
  }

  private swap(a: number, b: number): void {
    const { times, kinds, orders } = this;
    const t = times[a] as number;
    times[a] = times[b] as number;
    times[b] = t;
    const k = kinds[a] as number;
    kinds[a] = kinds[b] as number;
    kinds[b] = k;
    const o = orders[a] as OrderRec;
    orders[a] = orders[b] as OrderRec;
    orders[b] = o;
  }
}
