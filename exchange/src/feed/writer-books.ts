// The books as the feed writer process sees them (feed/writer-process.ts):
// for each, its watchers, the fan-out that writes to them (feed/fan-out.ts,
// as in the exchange's own process) and a ring of its last events, so that
// a watcher handed over a moment after its head was written still gets
// every event since. The exchange numbers and encodes the events; here they
// are only written (docs/architecture.md, "The feed writer process").

import type { CloseReason } from '../views/feed.js';
import { FanOut } from './fan-out.js';
import type { Entry } from './fan-out.js';
import { Ring } from './ring.js';
import { Watcher } from './watcher.js';
import type { FeedSink } from './watcher.js';
import type { BookKey, BookMessage, WatchMessage } from './writer-protocol.js';

/** Events each book keeps for watchers handed over late: far more than one hand-over takes. */
export const WRITER_RING_EVENTS = 4096;

class WriterBook {
  readonly watchers = new Set<Watcher>();
  readonly fan: FanOut;
  readonly ring = new Ring<Entry>(WRITER_RING_EVENTS);
  /** The last event received; undefined before the first. */
  seq: number | undefined;

  constructor(public epoch: number) {
    this.fan = new FanOut(this.watchers, 0);
  }

  /** The events before `seq` were not all sent here (nobody watched): start again at `seq`. */
  restart(seq: number, epoch: number): void {
    this.fan.flushAll();
    this.fan.drop(seq);
    this.ring.clear();
    this.seq = seq;
    this.epoch = epoch;
  }
}

export class WriterBooks {
  private readonly books = new Map<BookKey, WriterBook>();
  private readonly byId = new Map<number, Watcher>();

  /** `onGone`: a watcher left, by the id the exchange gave it. */
  constructor(private readonly onGone: (id: number) => void) {}

  get watching(): number {
    return this.byId.size;
  }

  private book(key: BookKey, epoch: number): WriterBook {
    let b = this.books.get(key);
    if (b === undefined) {
      b = new WriterBook(epoch);
      this.books.set(key, b);
    }
    return b;
  }

  apply(m: BookMessage): void {
    if (m.t === 'close-book') {
      const b = this.books.get(m.book);
      if (b === undefined) return;
      b.fan.drop(b.seq ?? 0);
      for (const w of [...b.watchers]) w.close(m.reason);
      return;
    }
    const b = this.book(m.book, m.epoch);
    if (m.t === 'reset') {
      b.restart(m.seq, m.epoch);
      for (const w of b.watchers) {
        w.through = m.seq;
        w.send(m.text);
      }
      return;
    }
    if (m.t === 'heartbeat') {
      if (b.epoch !== m.epoch || b.seq !== m.seq) b.restart(m.seq, m.epoch);
      b.fan.heartbeat({ seq: m.seq, event: 'heartbeat', data: null, text: m.text });
      return;
    }
    const first = m.events[0];
    if (first === undefined) return;
    if (b.epoch !== m.epoch || b.seq !== first[0] - 1) b.restart(first[0] - 1, m.epoch);
    const entries: Entry[] = [];
    for (const [seq, text] of m.events) {
      // Level or trade: the fan-out only writes the text.
      const e: Entry = { seq, event: 'level', data: null, text };
      b.ring.push(seq, e);
      entries.push(e);
    }
    b.seq = entries[entries.length - 1]?.seq ?? b.seq;
    b.fan.queue(entries, b.seq ?? 0);
  }

  /** A watcher whose head the exchange wrote up to `m.through`: it gets every event since. */
  watch(m: WatchMessage, sink: FeedSink): void {
    const b = this.book(m.book, m.epoch);
    const w = new Watcher(sink, m.maxBufferedBytes, () => {
      b.watchers.delete(w);
      this.byId.delete(m.id);
      this.onGone(m.id);
    });
    this.byId.set(m.id, w);
    b.watchers.add(w);
    w.through = m.through;
    // Rebuilt since its head was taken: what it holds is of a book that no longer is.
    if (b.epoch !== m.epoch) {
      w.close('slow_consumer');
      return;
    }
    if (b.seq === undefined || b.seq <= m.through) return;
    const missed = b.ring.after(m.through);
    if (missed === undefined) {
      w.close('slow_consumer');
      return;
    }
    w.send(missed.map((e) => e.text ?? '').join(''));
    w.through = b.seq;
  }

  /** The client of one stream went away. */
  left(id: number): void {
    this.byId.get(id)?.left();
  }

  /** End one stream with its `closed` event. */
  closeOne(id: number, reason: CloseReason): void {
    this.byId.get(id)?.close(reason);
  }
}
