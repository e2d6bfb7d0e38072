// The feed writer process's books (feed/writer-books.ts): a stream handed
// over after its head gets every event since its start, once, in order,
// whether the events came before or after it; a stream of a book rebuilt
// meanwhile, or too far behind, is closed and told to resume; a rebuilt
// book sends each stream its snapshot.

import { afterEach, describe, expect, it, vi } from 'vitest';

import { sseEvent } from './sse.js';
import { FakeSink } from './testing/fake-sink.js';
import { WRITER_RING_EVENTS, WriterBooks } from './writer-books.js';
import type { EventsMessage, WatchMessage } from './writer-protocol.js';

const BOOK = 'h100/us-west-1';
const level = (seq: number): readonly [number, string] => [
  seq,
  sseEvent('level', { type: 'level', sequence: seq }, seq),
];
const events = (from: number, to: number, epoch = 0): EventsMessage => ({
  t: 'events',
  book: BOOK,
  epoch,
  events: Array.from({ length: to - from + 1 }, (_, i) => level(from + i)),
});
const watch = (id: number, through: number, epoch = 0): WatchMessage => ({
  t: 'watch',
  id,
  book: BOOK,
  epoch,
  through,
  chunked: false,
  maxBufferedBytes: 1 << 20,
});
const ids = (s: FakeSink): (number | undefined)[] => s.events.map((e) => e.id);

afterEach(() => {
  vi.useRealTimers();
});

describe('WriterBooks', () => {
  it('a stream handed over late gets the events since its start from the ring, then the rest as they come', () => {
    vi.useFakeTimers();
    const books = new WriterBooks(() => undefined);
    const early = new FakeSink();
    books.watch(watch(1, 0), early);
    books.apply(events(1, 3));
    // Its head was written at 1; 2 and 3 came before the socket did.
    const late = new FakeSink();
    books.watch(watch(2, 1), late);
    expect(ids(late)).toEqual([2, 3]);
    books.apply(events(4, 5));
    vi.runAllTimers();
    expect(ids(early)).toEqual([1, 2, 3, 4, 5]);
    expect(ids(late)).toEqual([2, 3, 4, 5]);
  });

  it('starts again where the events resume after a time nobody watched', () => {
    vi.useFakeTimers();
    const books = new WriterBooks(() => undefined);
    books.apply(events(1, 2));
    // Events 3–9 were not sent here: nobody watched.
    const sink = new FakeSink();
    books.watch(watch(1, 9), sink);
    books.apply(events(10, 11));
    vi.runAllTimers();
    expect(ids(sink)).toEqual([10, 11]);
  });

  it('closes a stream whose events the ring no longer holds, or whose book was rebuilt since its head, saying to resume', () => {
    const gone: number[] = [];
    const books = new WriterBooks((id) => gone.push(id));
    books.apply(events(1, WRITER_RING_EVENTS + 10));
    const behind = new FakeSink();
    books.watch(watch(1, 5), behind);
    books.apply({ t: 'reset', book: BOOK, epoch: 1, seq: 7, text: sseEvent('snapshot', {}, 7) });
    const rebuilt = new FakeSink();
    books.watch(watch(2, 7, 0), rebuilt);
    for (const s of [behind, rebuilt]) {
      expect(s.events.map((e) => [e.event, e.data['reason']])).toEqual([
        ['closed', 'slow_consumer'],
      ]);
      expect(s.writableEnded).toBe(true);
    }
    expect(gone).toEqual([1, 2]);
    expect(books.watching).toBe(0);
  });

  it('a rebuilt book sends every stream its snapshot, and the events after it', () => {
    vi.useFakeTimers();
    const books = new WriterBooks(() => undefined);
    const sink = new FakeSink();
    books.watch(watch(1, 0), sink);
    books.apply(events(1, 2));
    vi.runAllTimers();
    books.apply({ t: 'reset', book: BOOK, epoch: 1, seq: 1, text: sseEvent('snapshot', {}, 1) });
    books.apply(events(2, 2, 1));
    vi.runAllTimers();
    expect(sink.events.map((e) => [e.event, e.id])).toEqual([
      ['level', 1],
      ['level', 2],
      ['snapshot', 1],
      ['level', 2],
    ]);
  });

  it('ends one stream or every stream of a book with the reason given, and hears of a client that left', () => {
    const gone: number[] = [];
    const books = new WriterBooks((id) => gone.push(id));
    const [a, b, c] = [new FakeSink(), new FakeSink(), new FakeSink()];
    books.watch(watch(1, 0), a);
    books.watch(watch(2, 0), b);
    books.watch({ ...watch(3, 0), book: 'a100/us-east-1' }, c);
    books.closeOne(1, 'unavailable');
    books.apply({ t: 'close-book', book: BOOK, reason: 'unavailable' });
    books.left(3);
    expect([a, b].map((s) => s.events.map((e) => e.data['reason']))).toEqual([
      ['unavailable'],
      ['unavailable'],
    ]);
    expect(c.chunks).toEqual([]);
    expect(gone).toEqual([1, 2, 3]);
  });
});
