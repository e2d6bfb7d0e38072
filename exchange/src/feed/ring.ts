// The last events of one book, kept for a client that reconnects with
// Last-Event-ID (feed/book-feed.ts): a fixed-size circular buffer of
// consecutive sequence numbers. The oldest goes when a new one comes.

export class Ring<T> {
  private readonly items: (T | undefined)[];
  /** Index of the oldest item held. */
  private start = 0;
  private size = 0;
  /** The sequence number of the oldest item held. */
  private first = 0;

  constructor(readonly capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1)
      throw new Error(`a ring holds at least one event, not ${capacity}`);
    this.items = new Array<T | undefined>(capacity);
  }

  get length(): number {
    return this.size;
  }

  /** Add the item numbered `seq`: one more than the newest held, unless the ring is empty. */
  push(seq: number, item: T): void {
    if (this.size > 0 && seq !== this.first + this.size) {
      throw new Error(`ring: event ${seq} after ${this.first + this.size - 1}`);
    }
    if (this.size === 0) this.first = seq;
    if (this.size < this.capacity) {
      this.items[(this.start + this.size) % this.capacity] = item;
      this.size++;
      return;
    }
    this.items[this.start] = item;
    this.start = (this.start + 1) % this.capacity;
    this.first++;
  }

  /**
   * The items numbered after `seq` up to the newest, oldest first; undefined
   * when some of them are no longer (or never were) held.
   */
  after(seq: number): T[] | undefined {
    const newest = this.first + this.size - 1;
    if (seq === newest) return [];
    if (this.size === 0 || seq < this.first - 1 || seq > newest) return undefined;
    const out: T[] = [];
    for (let s = seq + 1; s <= newest; s++) {
      out.push(this.items[(this.start + (s - this.first)) % this.capacity] as T);
    }
    return out;
  }

  clear(): void {
    this.items.fill(undefined);
    this.start = 0;
    this.size = 0;
  }
}
