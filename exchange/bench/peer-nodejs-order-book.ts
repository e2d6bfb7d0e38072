// The peer: the npm package `nodejs-order-book` (a generic price-time limit
// order book, divisible by nature), fed the plain stream: size = nodes,
// price = cents, same ids, cancels mapped to `cancel(id)`.

import { OrderBook as PeerBook, Side } from 'nodejs-order-book';
import { CANCEL, SELL, type OrderStream } from './order-stream.js';

export interface PeerCounts {
  /** Nodes matched (each match counted once, on the taker's side). */
  matchedNodes: number;
  /** Places that matched at least one node. */
  matchingOrders: number;
  /** Places the peer answered with an error. */
  errors: number;
  /** Cancels that found their order. */
  cancelHits: number;
  cancelMisses: number;
  /** Resting nodes per side once the stream is done (a sanity figure). */
  bidNodes: number;
  askNodes: number;
}

function newCounts(): PeerCounts {
  return {
    matchedNodes: 0,
    matchingOrders: 0,
    errors: 0,
    cancelHits: 0,
    cancelMisses: 0,
    bidNodes: 0,
    askNodes: 0,
  };
}

/** The whole stream on a fresh book, no per-command timing. */
export function runPeer(s: OrderStream): PeerCounts {
  const book = new PeerBook();
  const counts = newCounts();
  const { kind, side, nodes, price, target, ids } = s;
  for (let i = 0; i < s.length; i++) {
    if (kind[i] === CANCEL) {
      if (book.cancel(ids[target[i] ?? 0] ?? '') === undefined) counts.cancelMisses++;
      else counts.cancelHits++;
    } else {
      const size = nodes[i] ?? 0;
      const r = book.limit({
        side: side[i] === SELL ? Side.SELL : Side.BUY,
        id: ids[i] ?? '',
        size,
        price: price[i] ?? 0,
      });
      if (r.err !== null) counts.errors++;
    }
  }
  return counts;
}

/**
 * The whole stream on a fresh book, timing every command into `latNs`
 * (nanoseconds, one slot per command). Counts are taken outside the timed part.
 */
export function runPeerTimed(s: OrderStream, latNs: Float64Array): PeerCounts {
  const book = new PeerBook();
  const counts = newCounts();
  const { kind, side, nodes, price, target, ids } = s;
  for (let i = 0; i < s.length; i++) {
    if (kind[i] === CANCEL) {
      const id = ids[target[i] ?? 0] ?? '';
      const t0 = process.hrtime.bigint();
      const r = book.cancel(id);
      latNs[i] = Number(process.hrtime.bigint() - t0);
      if (r === undefined) counts.cancelMisses++;
      else counts.cancelHits++;
    } else {
      const size = nodes[i] ?? 0;
      const input = {
        side: side[i] === SELL ? Side.SELL : Side.BUY,
        id: ids[i] ?? '',
        size,
        price: price[i] ?? 0,
      };
      const t0 = process.hrtime.bigint();
      const r = book.limit(input);
      latNs[i] = Number(process.hrtime.bigint() - t0);
      if (r.err !== null) {
        counts.errors++;
      } else {
        const matched = size - r.quantityLeft;
        if (matched > 0) {
          counts.matchedNodes += matched;
          counts.matchingOrders++;
        }
      }
    }
  }
  const [asks, bids] = book.depth();
  for (const [, size] of asks) counts.askNodes += size;
  for (const [, size] of bids) counts.bidNodes += size;
  return counts;
}
