import type { OrderRec } from './order-rec.js';

/**
 * Due times of scheduled orders' arrivals (D13), a binary min-heap ordered by
 * (time, acceptance order). Entries are not removed when their order goes
 * away (cancelled or expired before it arrives, which is rare); they are
 * skipped when they come due, and `dropDone` clears them out when they are
 * more than half the heap.
 */
export class TimerHeap {
  private readonly times: number[] = [];
  private readonly orders: OrderRec[] = [];

  get size(): number {
    return this.times.length;
  }

  /** Due time of the first entry; Infinity when empty. */
  peekTime(): number {
    return this.times.length === 0 ? Infinity : (this.times[0] as number);
  }

  firstOrder(): OrderRec {
    return this.orders[0] as OrderRec;
  }

  push(time: number, order: OrderRec): void {
    let i = this.times.length;
    this.times.push(time);
    this.orders.push(order);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  /** Remove the first entry; the caller read it with peekTime/firstOrder. */
  pop(): void {
    const { times, orders } = this;
    if (times.length === 0) return;
    this.swap(0, times.length - 1);
    times.pop();
    orders.pop();
    this.siftDown(0);
  }

  /** Drop the entries of orders that are done, and rebuild the heap: O(n). */
  dropDone(isDone: (o: OrderRec) => boolean): void {
    const { times, orders } = this;
    let n = 0;
    for (let i = 0; i < times.length; i++) {
      const o = orders[i] as OrderRec;
      if (isDone(o)) continue;
      times[n] = times[i] as number;
      orders[n] = o;
      n++;
    }
    times.length = orders.length = n;
    for (let i = (n >> 1) - 1; i >= 0; i--) this.siftDown(i);
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

  private less(a: number, b: number): boolean {
    const ta = this.times[a] as number;
    const tb = this.times[b] as number;
    if (ta !== tb) return ta < tb;
    return (this.orders[a] as OrderRec).acceptSeq < (this.orders[b] as OrderRec).acceptSeq;
  }

  private swap(a: number, b: number): void {
    const { times, orders } = this;
    const t = times[a] as number;
    times[a] = times[b] as number;
    times[b] = t;
    const o = orders[a] as OrderRec;
    orders[a] = orders[b] as OrderRec;
    orders[b] = o;
  }
}
