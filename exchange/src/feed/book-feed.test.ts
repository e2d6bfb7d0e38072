// The feed of one book without HTTP (issue 22): what a batch publishes, how
// queued updates reach watchers (one buffer for all, the rest only for one
// that joined meanwhile), the heartbeat, a slow watcher dropped with a last
// event, and a reset. Sinks here are fakes that record what was written and
// say how many bytes they hold unsent.

import { afterEach, describe, expect, it } from 'vitest';

import type { FillRow } from '../market/rows.js';
import { OrderBook } from '../matching/order-book.js';
import { T0, limitBuy, sell } from '../matching/testing/given.js';
import { BookFeed, DEFAULT_FEED_OPTIONS } from './book-feed.js';
import type { FeedOptions } from './book-feed.js';
import { FakeSink } from './testing/fake-sink.js';

const feeds: BookFeed[] = [];

afterEach(() => {
  for (const f of feeds.splice(0)) f.close('unavailable');
});

function feedOf(book: OrderBook, sequence = 0, o: Partial<FeedOptions> = {}): BookFeed {
  const f = new BookFeed(
    'h100',
    'us-west-1',
    book,
    sequence,
    { ...DEFAULT_FEED_OPTIONS, ...o },
    () => T0,
  );
  feeds.push(f);
  return f;
}

/** Run `step` on the book and publish what it changed, as a committed batch. */
function batch(feed: BookFeed, book: OrderBook, step: () => void, fills: FillRow[] = []): void {
  step();
  const p = feed.prepare(book, fills);
  if (p !== undefined) feed.publish(p);
}

/** Lets the feed's write run (with few watchers it is the next turn's: fan-out.ts). */
const flushed = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('BookFeed', () => {
  it('starts a watcher with a snapshot of every level, then numbered absolute levels in one write per flush', async () => {
    const book = new OrderBook();
    book.place(sell('s1', 2, 210), T0);
    book.place(limitBuy('b1', 1, 190), T0);
    const feed = feedOf(book, 41);
    const sink = new FakeSink();
    feed.watch(sink, undefined, () => undefined);
    expect(sink.chunks[0]).toMatch(/^retry: 1000\n\nid: 41\nevent: snapshot\n/);
    batch(feed, book, () => {
      book.place(sell('s2', 1, 210), T0);
      book.place(sell('s3', 1, 220), T0);
    });
    expect(feed.sequence).toBe(43);
    await flushed();
    expect(sink.chunks).toHaveLength(2);
    expect(sink.events).toMatchObject([
      {
        id: 41,
        event: 'snapshot',
        data: {
          type: 'snapshot',
          gpu_type: 'h100',
          zone: 'us-west-1',
          sequence: 41,
          time: new Date(T0).toISOString(),
          bids: [{ price: 1.9, gpus: 8, orders: 1 }],
          asks: [{ price: 2.1, gpus: 16, orders: 1 }],
        },
      },
      {
        id: 42,
        event: 'level',
        data: {
          sequence: 42,
          side: 'ask',
          price: 2.1,
          gpus: 24,
          orders: 2,
        },
      },
      {
        id: 43,
        event: 'level',
        data: {
          sequence: 43,
          side: 'ask',
          price: 2.2,
          gpus: 8,
          orders: 1,
        },
      },
    ]);
  });

  it('a batch that leaves every level as it was publishes nothing and takes no number', () => {
    const book = new OrderBook();
    const feed = feedOf(book);
    // An order placed and cancelled in one batch: the level is as it was.
    expect(
      feed.prepare(
        book,
        (() => {
          book.place(sell('s1', 1, 210), T0);
          book.cancel('s1', T0);
          return [];
        })(),
      ),
    ).toBeUndefined();
    expect(feed.sequence).toBe(0);
  });

  it('a watcher that joins while updates wait gets only those after its start; a heartbeat repeats the last number', async () => {
    const book = new OrderBook();
    const feed = feedOf(book);
    const early = new FakeSink();
    feed.watch(early, undefined, () => undefined);
    batch(feed, book, () => book.place(sell('s1', 1, 210), T0));
    const late = new FakeSink();
    feed.watch(late, undefined, () => undefined);
    batch(feed, book, () => book.place(sell('s2', 1, 220), T0));
    await flushed();
    expect(early.events.map((e) => e.id)).toEqual([0, 1, 2]);
    expect(late.events.map((e) => [e.event, e.id])).toEqual([
      ['snapshot', 1],
      ['level', 2],
    ]);
    feed.heartbeat();
    for (const s of [early, late]) {
      expect(s.events.at(-1)).toMatchObject({
        id: 2,
        event: 'heartbeat',
        data: { type: 'heartbeat', sequence: 2 },
      });
    }
  });

  it('resumes after a Last-Event-ID the ring holds, with the events after it; else a snapshot', () => {
    const book = new OrderBook();
    const feed = feedOf(book, 0, { ringEvents: 3 });
    for (let i = 0; i < 5; i++) batch(feed, book, () => book.place(sell(`s${i}`, 1, 200 + i), T0));
    const resumed = new FakeSink();
    feed.watch(resumed, 2, () => undefined);
    expect(resumed.events.map((e) => [e.event, e.id])).toEqual([
      ['level', 3],
      ['level', 4],
      ['level', 5],
    ]);
    const stale = new FakeSink();
    feed.watch(stale, 1, () => undefined);
    expect(stale.events.map((e) => [e.event, e.id])).toEqual([['snapshot', 5]]);
    const current = new FakeSink();
    feed.watch(current, 5, () => undefined);
    expect(current.events).toEqual([]);
  });

  it('drops a watcher whose unsent bytes pass the bound, with a last event saying why; the others go on', async () => {
    const book = new OrderBook();
    const feed = feedOf(book, 0, { maxBufferedBytes: 300 });
    const slow = new FakeSink();
    const fast = new FakeSink();
    let gone = 0;
    feed.watch(slow, undefined, () => gone++);
    feed.watch(fast, undefined, () => undefined);
    slow.stuck = true;
    for (let i = 0; i < 10; i++) {
      batch(feed, book, () => book.place(sell(`s${i}`, 1, 200 + i), T0));
      await flushed();
    }
    expect(gone).toBe(1);
    expect(feed.watching).toBe(1);
    const last = slow.events.at(-1);
    expect(last).toMatchObject({
      event: 'closed',
      data: { type: 'closed', reason: 'slow_consumer' },
    });
    expect(last?.data['message']).toContain('Last-Event-ID');
    expect(slow.writableEnded).toBe(true);
    expect(fast.events.map((e) => e.id)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('after a reset every watcher gets a snapshot of the book as reloaded, numbered as the database says', async () => {
    const book = new OrderBook();
    const feed = feedOf(book);
    const sink = new FakeSink();
    feed.watch(sink, undefined, () => undefined);
    batch(feed, book, () => book.place(sell('s1', 1, 210), T0));
    const reloaded = new OrderBook();
    reloaded.place(limitBuy('b1', 1, 180), T0);
    feed.reset(reloaded, 7);
    expect(feed.sequence).toBe(7);
    expect(sink.events.map((e) => [e.event, e.id])).toEqual([
      ['snapshot', 0],
      ['level', 1],
      ['snapshot', 7],
    ]);
    expect(sink.events.at(-1)?.data).toMatchObject({ bids: [{ price: 1.8 }], asks: [] });
    batch(feed, reloaded, () => reloaded.place(sell('s2', 1, 210), T0));
    await flushed();
    expect(sink.events.at(-1)).toMatchObject({ id: 8, event: 'level' });
  });

  it('closing ends every stream with the reason and takes no new watcher', () => {
    const book = new OrderBook();
    const feed = feedOf(book);
    const sink = new FakeSink();
    feed.watch(sink, undefined, () => undefined);
    feed.close('unavailable');
    expect(sink.events.at(-1)).toMatchObject({ event: 'closed', data: { reason: 'unavailable' } });
    expect(feed.closed).toBe(true);
    expect(() => feed.watch(new FakeSink(), undefined, () => undefined)).toThrow(
      /no longer serves/,
    );
  });
});
