// The live feed of one book (GET /v1/stream, docs/api/market-data.md): the
// book's levels as last committed, its sequence number, the last events for
// resuming, and the clients watching.
//
// The book's writer (market/book-writer.ts) calls it at two points of each
// batch. prepare(), right after the batch ran: which levels the batch changed
// (the engine records their prices, OrderBook.trackLevels) and how they stand
// now, against the levels last published, plus the batch's fills; each event
// gets the next number, and the batch writes the last one to
// book_sequences with everything else (migration 0019). publish(), once the
// batch is committed and before its callers hear of it: the levels and the
// number move on, the events join the ring and go to the watchers. A batch
// whose commit fails is never published; the writer rebuilds the book from
// the database and reset() sends every watcher a fresh snapshot.
//
// Watchers cost the book nothing: publish() only queues. The queued events
// are encoded once, joined into one buffer and written to every watcher
// together, on a timer that waits longer the more watchers there are, so a
// burst of batches is one write per watcher (feed/fan-out.ts).

import { GpuxError, InvariantError } from '@gpux/shared';
import type { GpuType, Zone } from '@gpux/shared';

import type { FillRow } from '../market/rows.js';
import type { Level, OrderBook } from '../matching/index.js';
import {
  feedHeartbeatView,
  feedLevelView,
  feedSnapshotView,
  feedTradeView,
} from '../views/feed.js';
import type { CloseReason } from '../views/feed.js';
import { FanOut, textOf } from './fan-out.js';
import type { Entry } from './fan-out.js';
import { Ring } from './ring.js';
import { SSE_RETRY, sseEvent } from './sse.js';
import { Watcher } from './watcher.js';
import type { FeedSink } from './watcher.js';
import type { FeedWriter } from './writer.js';

export interface FeedOptions {
  /** Events of each book kept for clients that resume with Last-Event-ID. */
  readonly ringEvents: number;
  /** A watcher with more bytes than this waiting to be sent is dropped (slow_consumer). */
  readonly maxBufferedBytes: number;
  /** Every book with watchers sends a heartbeat this often; 0: never (tests). */
  readonly heartbeatMs: number;
}

export const DEFAULT_FEED_OPTIONS: FeedOptions = {
  ringEvents: 8192,
  maxBufferedBytes: 1024 * 1024,
  heartbeatMs: 5000,
};

/** A batch's events, numbered, waiting for its commit. */
export interface Prepared {
  readonly first: number;
  readonly last: number;
  readonly trades: readonly { seq: number; fill: FillRow }[];
  readonly levels: readonly { seq: number; bid: boolean; level: Level }[];
}

type Side = Map<number, Level>;

export class BookFeed {
  /** The levels as of `seq`: what watchers have been told. */
  private readonly bids: Side = new Map();
  private readonly asks: Side = new Map();
  private seq: number;
  private readonly ring: Ring<Entry>;
  private readonly watchers = new Set<Watcher>();
  private readonly fan: FanOut;
  private snapshot: { seq: number; text: string } | undefined;
  private isClosed = false;
  /** The writer process its streams were handed to (feed/writer.ts), and how many are there. */
  private writer: FeedWriter | undefined;
  private handedOver = 0;
  /** How many times the book was rebuilt from the database (reset). */
  private epoch = 0;

  constructor(
    readonly gpuType: GpuType,
    readonly zone: Zone,
    book: OrderBook,
    sequence: number,
    private readonly o: FeedOptions,
    private readonly now: () => number,
  ) {
    this.ring = new Ring(o.ringEvents);
    this.seq = sequence;
    this.fan = new FanOut(this.watchers, sequence);
    this.load(book);
  }

  /** The number of the last update published: GET /v1/orderbook's `sequence`. */
  get sequence(): number {
    return this.seq;
  }

  /** The market closed: no new watcher is taken. */
  get closed(): boolean {
    return this.isClosed;
  }

  get watching(): number {
    return this.watchers.size + this.handedOver;
  }

  private get key(): string {
    return `${this.gpuType}/${this.zone}`;
  }

  /** The writer process has streams of this book: it gets the book's events. */
  private get remote(): FeedWriter | undefined {
    return this.handedOver > 0 ? this.writer : undefined;
  }

  /**
   * The events of the batch that just ran on `book`, numbered from the
   * last published; undefined when it changed nothing the feed shows.
   */
  prepare(book: OrderBook, fills: readonly FillRow[]): Prepared | undefined {
    const changed = book.takeChangedLevels();
    let seq = this.seq;
    const trades = fills.map((fill) => ({ seq: ++seq, fill }));
    const levels: { seq: number; bid: boolean; level: Level }[] = [];
    for (const [bid, prices, side] of [
      [true, changed.bids, this.bids],
      [false, changed.asks, this.asks],
    ] as const) {
      for (const price of new Set(prices)) {
        const level = book.levelAt(bid, price) ?? { price, gpus: 0, orders: 0 };
        const was = side.get(price);
        if ((was?.gpus ?? 0) === level.gpus && (was?.orders ?? 0) === level.orders) continue;
        levels.push({ seq: ++seq, bid, level });
      }
    }
    if (seq === this.seq) return undefined;
    return { first: this.seq + 1, last: seq, trades, levels };
  }

  /** The batch of `p` is committed: tell the watchers. */
  publish(p: Prepared): void {
    if (p.first !== this.seq + 1) {
      throw new InvariantError(`feed ${this.gpuType}/${this.zone}: ${p.first} after ${this.seq}`);
    }
    const at = this.now();
    const entries: Entry[] = [];
    for (const { seq, fill } of p.trades) {
      const t = { priceCents: fill.price_cents, gpus: fill.gpus, atMs: fill.at_ms };
      entries.push({ seq, event: 'trade', data: feedTradeView(seq, t) });
    }
    for (const { seq, bid, level } of p.levels) {
      const side = bid ? this.bids : this.asks;
      if (level.gpus === 0) side.delete(level.price);
      else side.set(level.price, level);
      entries.push({ seq, event: 'level', data: feedLevelView(seq, bid, level, at) });
    }
    for (const e of entries) this.ring.push(e.seq, e);
    this.seq = p.last;
    this.snapshot = undefined;
    this.fan.queue(entries, this.seq);
    this.remote?.post({ t: 'published', book: this.key, epoch: this.epoch, entries });
  }

  /**
   * The book was rebuilt from the database (a commit failed): the levels
   * and the number are the database's now, the ring starts again, and every
   * watcher gets a snapshot.
   */
  reset(book: OrderBook, sequence: number): void {
    this.fan.flushAll();
    this.fan.drop(sequence);
    this.ring.clear();
    this.seq = sequence;
    this.load(book);
    this.epoch++;
    const text = this.snapshotText();
    for (const w of this.watchers) {
      w.through = sequence;
      w.send(text);
    }
    this.remote?.post({ t: 'reset', book: this.key, epoch: this.epoch, seq: sequence, text });
  }

  /**
   * A new watcher: resumes after `lastEventId` when every event since is
   * still held, else starts with a snapshot. `onGone`: it left.
   */
  watch(sink: FeedSink, lastEventId: number | undefined, onGone: () => void): Watcher {
    const head = this.head(lastEventId);
    // Its first bytes do not count against the bound: a deep book's snapshot may be large.
    const w = new Watcher(sink, this.o.maxBufferedBytes + Buffer.byteLength(head), () => {
      this.watchers.delete(w);
      onGone();
    });
    w.through = this.seq;
    this.watchers.add(w);
    w.send(head);
    return w;
  }

  /**
   * A new stream for the writer process (feed/writer.ts): what its head
   * says (as watch()), the number it ends at, and the rest of what the
   * writer needs. From now on the book's events go to `writer`; `end()`,
   * once, when the stream is over (or was never handed over).
   */
  handOver(
    lastEventId: number | undefined,
    writer: FeedWriter,
  ): {
    head: string;
    watch: { book: string; epoch: number; through: number; maxBufferedBytes: number };
    end: () => void;
  } {
    const head = this.head(lastEventId);
    this.writer = writer;
    this.handedOver++;
    let ended = false;
    return {
      head,
      watch: {
        book: this.key,
        epoch: this.epoch,
        through: this.seq,
        maxBufferedBytes: this.o.maxBufferedBytes,
      },
      end: () => {
        if (ended) return;
        ended = true;
        this.handedOver--;
      },
    };
  }

  /** What a new stream is sent first: a snapshot, or the events after `lastEventId` when all are held. */
  private head(lastEventId: number | undefined): string {
    if (this.isClosed) {
      throw new GpuxError('unavailable', 'this exchange process no longer serves the market');
    }
    const missed =
      lastEventId === undefined
        ? undefined
        : lastEventId === this.seq
          ? []
          : this.ring.after(lastEventId);
    return SSE_RETRY + (missed === undefined ? this.snapshotText() : missed.map(textOf).join(''));
  }

  /** Tell every watcher the stream is alive, with the last number. */
  heartbeat(): void {
    if (this.watching === 0) return;
    // Not a new number: it repeats the last.
    const entry: Entry = {
      seq: this.seq,
      event: 'heartbeat',
      data: feedHeartbeatView(this.seq, this.now()),
    };
    this.fan.heartbeat(entry);
    const text = textOf(entry);
    this.remote?.post({ t: 'heartbeat', book: this.key, epoch: this.epoch, seq: this.seq, text });
  }

  /** End every stream (the market is closing). */
  close(reason: CloseReason): void {
    this.isClosed = true;
    this.fan.drop(this.seq);
    for (const w of [...this.watchers]) w.close(reason);
    this.remote?.post({ t: 'close-book', book: this.key, reason });
  }

  private load(book: OrderBook): void {
    book.trackLevels();
    book.takeChangedLevels();
    const all = book.snapshot(Infinity);
    this.bids.clear();
    this.asks.clear();
    for (const l of all.bids) this.bids.set(l.price, l);
    for (const l of all.asks) this.asks.set(l.price, l);
    this.snapshot = undefined;
  }

  private snapshotText(): string {
    if (this.snapshot?.seq !== this.seq) {
      const bids = [...this.bids.values()].sort((a, b) => b.price - a.price);
      const asks = [...this.asks.values()].sort((a, b) => a.price - b.price);
      const data = feedSnapshotView(this, this.seq, this.now(), bids, asks);
      this.snapshot = { seq: this.seq, text: sseEvent('snapshot', data, this.seq) };
    }
    return this.snapshot.text;
  }
}
