import type { OrderRec } from './order-rec.js';

/**
 * Open orders that expire after the same delay (expiresAt − acceptedAt), or
 * at the same time, oldest first. Orders are added in acceptance order and the
 * book's clock never goes back, so each such list is already sorted by expiry.
 */
export class DelayQueue {
  head: OrderRec | null = null;
  tail: OrderRec | null = null;
  /** Index in ExpiryQueues' heap; -1 when empty. */
  pos = -1;

  constructor(
    /** The delay, or for `absolute` lists the expiry time. */
    readonly key: number,
    readonly absolute: boolean,
  ) {}
}

/**
 * Open orders by expiry (D12), in order of (expiresAt, acceptance order).
 * Nearly all orders share a few delays (24 h for limit buys, a sell's window),
 * so orders sit in one FIFO list per delay, linked through the orders, and a
 * small heap orders the lists by their heads: adding and removing an order is
 * O(1) unless it heads its list, then O(log lists). A plain heap of orders
 * would cost O(log n) cache misses whenever a resting order fills, and
 * leaving filled orders in it lazily would keep them alive for the garbage
 * collector until their expiry (a sell's may be 30 days away).
 */
export class ExpiryQueues {
  private readonly byDelay = new Map<number, DelayQueue>();
  /**
   * An expiry not counted from acceptance (a given start, expiresAt or window
   * end) would make a list of its own by delay; by time, equal ones share a
   * list.
   */
  private readonly byTime = new Map<number, DelayQueue>();
  private readonly heap: DelayQueue[] = [];

  /** The order that expires first, if any. */
  peek(): OrderRec | undefined {
    return this.heap[0]?.head ?? undefined;
  }

  /** Add an order accepted no earlier than every order already here. */
  push(o: OrderRec): void {
    const input = o.input;
    const absolute =
      input.startAt !== undefined ||
      input.expiresAt !== undefined ||
      input.windowEndAt !== undefined;
    const map = absolute ? this.byTime : this.byDelay;
    const key = absolute ? o.expiresAt : o.expiresAt - o.acceptedAt;
    let q = map.get(key);
    if (q === undefined) {
      q = new DelayQueue(key, absolute);
      map.set(key, q);
    }
    o.expQueue = q;
    o.expPrev = q.tail;
    o.expNext = null;
    if (q.tail === null) {
      q.head = q.tail = o;
      q.pos = this.heap.length;
      this.heap.push(q);
      this.up(q.pos);
    } else {
      q.tail.expNext = o;
      q.tail = o;
    }
  }

  /** Take `o` out; a no-op when it is not here. */
  remove(o: OrderRec): void {
    const q = o.expQueue;
    if (q === null) return;
    const wasHead = q.head === o;
    if (o.expPrev === null) q.head = o.expNext;
    else o.expPrev.expNext = o.expNext;
    if (o.expNext === null) q.tail = o.expPrev;
    else o.expNext.expPrev = o.expPrev;
    o.expQueue = o.expPrev = o.expNext = null;
    if (!wasHead) return;
    if (q.head === null) {
      (q.absolute ? this.byTime : this.byDelay).delete(q.key);
      this.removeAt(q.pos);
      q.pos = -1;
    } else {
      this.down(q.pos); // its head is later now
    }
  }

  private removeAt(i: number): void {
    const last = this.heap.pop() as DelayQueue;
    if (i === this.heap.length) return;
    this.heap[i] = last;
    last.pos = i;
    this.up(i);
    this.down(last.pos);
  }

  private less(a: DelayQueue, b: DelayQueue): boolean {
    const x = a.head as OrderRec;
    const y = b.head as OrderRec;
    return x.expiresAt !== y.expiresAt ? x.expiresAt < y.expiresAt : x.acceptSeq < y.acceptSeq;
  }

  private up(start: number): void {
    const heap = this.heap;
    let i = start;
    const q = heap[i] as DelayQueue;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as DelayQueue;
      if (!this.less(q, p)) break;
      heap[i] = p;
      p.pos = i;
      i = parent;
    }
    heap[i] = q;
    q.pos = i;
  }

  private down(start: number): void {
    const heap = this.heap;
    const n = heap.length;
    let i = start;
    const q = heap[i] as DelayQueue;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let c = l;
      if (r < n && this.less(heap[r] as DelayQueue, heap[l] as DelayQueue)) c = r;
      const child = heap[c] as DelayQueue;
      if (!this.less(child, q)) break;
      heap[i] = child;
      child.pos = i;
      i = c;
    }
    heap[i] = q;
    q.pos = i;
  }
}
