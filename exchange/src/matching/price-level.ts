import type { OrderRec } from './order-rec.js';

/**
 * The orders resting at one price, oldest first, as an intrusive doubly
 * linked list through the orders themselves: append and unlink are O(1) and
 * allocate nothing.
 */
export class PriceLevel {
  head: OrderRec | null = null;
  tail: OrderRec | null = null;
  /** Σ remaining nodes of the orders here. */
  nodes = 0;
  count = 0;

  constructor(readonly price: number) {}

  append(o: OrderRec): void {
    o.level = this;
    o.prev = this.tail;
    o.next = null;
    if (this.tail === null) this.head = o;
    else this.tail.next = o;
    this.tail = o;
    this.nodes += o.remaining;
    this.count++;
  }

  unlink(o: OrderRec): void {
    if (o.prev === null) this.head = o.next;
    else o.prev.next = o.next;
    if (o.next === null) this.tail = o.prev;
    else o.next.prev = o.prev;
    this.nodes -= o.remaining;
    this.count--;
    o.prev = null;
    o.next = null;
    o.level = null;
  }
}
