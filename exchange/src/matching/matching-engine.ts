import type { GpuType, Zone } from '@gpux/shared';

import { OrderBook } from './order-book.js';

/** A book's key: one continuous double auction per GPU type and zone. */
export type BookKey = `${GpuType}/${Zone}`;

export function bookKey(gpuType: GpuType, zone: Zone): BookKey {
  return `${gpuType}/${zone}`;
}

/**
 * The books of the exchange. Each book has one writer: whoever holds the
 * book calls it; this registry is the seam where "the single writer of book
 * X" can later become an owner elsewhere (architecture.md, beyond one machine).
 */
export class MatchingEngine {
  private readonly books = new Map<BookKey, OrderBook>();

  book(gpuType: GpuType, zone: Zone): OrderBook {
    const key = bookKey(gpuType, zone);
    let book = this.books.get(key);
    if (book === undefined) {
      book = new OrderBook();
      this.books.set(key, book);
    }
    return book;
  }

  /** Install a book rebuilt from persistence (OrderBook.restore) before traffic. */
  install(gpuType: GpuType, zone: Zone, book: OrderBook): void {
    this.books.set(bookKey(gpuType, zone), book);
  }

  keys(): BookKey[] {
    return [...this.books.keys()];
  }
}
