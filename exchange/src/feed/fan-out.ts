// How a book's published events reach its watchers (feed/book-feed.ts).
// Events are queued as they are published and written later, together: an
// event that comes an interval (growing with the number of watchers,
// flushDelayMs) or more after the last write began is written once the event
// loop's turn ends, with the rest of its batch; one that comes sooner waits
// the interval, with whatever else comes meanwhile. The
// queue is encoded once, joined into one buffer, and that buffer is written
// to every watcher that has been sent everything before it (a watcher that
// joined since gets only the events after its start). The writes go in
// slices of FLUSH_SLICE watchers, one slice per turn of the event loop, so
// that a thousand watchers never hold up the order path for more than a
// slice at a time; the next write waits until the last has reached everyone.

import { sseEvent } from './sse.js';
import type { Watcher } from './watcher.js';

/** One event of the feed, encoded when first sent. */
export interface Entry {
  /** Its number; a heartbeat repeats the last. */
  readonly seq: number;
  readonly event: 'level' | 'trade' | 'heartbeat';
  readonly data: unknown;
  text?: string;
}

export const textOf = (e: Entry): string => (e.text ??= sseEvent(e.event, e.data, e.seq));

/** A book's watchers are written at most once per 1 ms per this many of them, … */
const WATCHERS_PER_MS = 40;
/** … and at least once per this long while events wait. */
const MAX_FLUSH_DELAY_MS = 25;
/** Watchers written to in one turn of the event loop. */
const FLUSH_SLICE = 100;

/** The least time between two writes to a book's `watchers` watchers. */
export function flushDelayMs(watchers: number): number {
  return Math.min(MAX_FLUSH_DELAY_MS, Math.floor(watchers / WATCHERS_PER_MS));
}

/** A write under way: `entries` (numbered from after `from` to `to`) to `watchers`, from `next` on. */
interface Write {
  readonly entries: readonly Entry[];
  readonly from: number;
  readonly to: number;
  readonly watchers: readonly Watcher[];
  next: number;
  all?: Buffer;
}

export class FanOut {
  private pending: Entry[] = [];
  /** The number of the last event taken into a write (or that nobody waited for). */
  private taken: number;
  private cancelTimer: (() => void) | undefined;
  private write: Write | undefined;
  private cancelSlice: (() => void) | undefined;
  /** When the last write began (Date.now()). */
  private lastWrite = -Infinity;

  constructor(
    private readonly watchers: ReadonlySet<Watcher>,
    sequence: number,
  ) {
    this.taken = sequence;
  }

  /** Events published, numbered up to `sequence`: write them soon. */
  queue(entries: readonly Entry[], sequence: number): void {
    if (this.watchers.size === 0) {
      this.drop(sequence);
      return;
    }
    this.pending.push(...entries);
    this.schedule();
  }

  /** A heartbeat (numbered as the last event): written now, after what is queued. */
  heartbeat(entry: Entry): void {
    if (this.watchers.size === 0) return;
    this.pending.push(entry);
    this.flush();
  }

  /** Write everything queued to everyone before returning (a reset follows). */
  flushAll(): void {
    this.flush();
    this.finish();
  }

  /** Nobody waits for what is queued: forget it; the book is at `sequence`. */
  drop(sequence: number): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.cancelSlice?.();
    this.cancelSlice = undefined;
    this.write = undefined;
    this.pending = [];
    this.taken = sequence;
  }

  private schedule(): void {
    if (this.cancelTimer !== undefined) return;
    // After a quiet spell at once; else the whole interval, so that a busy
    // book's writes stay that far apart and gather what comes meanwhile.
    const interval = flushDelayMs(this.watchers.size);
    const delay = Date.now() - this.lastWrite >= interval ? 0 : interval;
    if (delay === 0) {
      const t = setImmediate(() => this.flush());
      this.cancelTimer = () => clearImmediate(t);
    } else {
      const t = setTimeout(() => this.flush(), delay);
      this.cancelTimer = () => clearTimeout(t);
    }
  }

  /** Start writing what is queued (a write still under way is finished first). */
  private flush(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.finish();
    const entries = this.pending;
    const last = entries[entries.length - 1];
    if (last === undefined) return;
    this.pending = [];
    this.lastWrite = Date.now();
    this.write = { entries, from: this.taken, to: last.seq, watchers: [...this.watchers], next: 0 };
    this.taken = last.seq;
    this.slice();
  }

  /** Write to the next slice of watchers; the rest on the next turn. */
  private slice(): void {
    this.cancelSlice = undefined;
    const w = this.write;
    if (w === undefined) return;
    const end = Math.min(w.next + FLUSH_SLICE, w.watchers.length);
    for (; w.next < end; w.next++) this.send(w, w.watchers[w.next] as Watcher);
    if (w.next < w.watchers.length) {
      const t = setImmediate(() => this.slice());
      this.cancelSlice = () => clearImmediate(t);
      return;
    }
    this.write = undefined;
    if (this.pending.length > 0) this.schedule();
  }

  /** Finish the write under way now. */
  private finish(): void {
    const w = this.write;
    if (w === undefined) return;
    this.cancelSlice?.();
    this.cancelSlice = undefined;
    for (; w.next < w.watchers.length; w.next++) this.send(w, w.watchers[w.next] as Watcher);
    this.write = undefined;
  }

  private send(w: Write, watcher: Watcher): void {
    if (watcher.closed) return;
    if (watcher.through === w.from) {
      watcher.send((w.all ??= Buffer.from(w.entries.map(textOf).join(''))));
    } else if (watcher.through < w.to) {
      // Joined after the last write, with the events up to its start: the rest only.
      const since = watcher.through;
      watcher.send(
        w.entries
          .filter((e) => e.seq > since)
          .map(textOf)
          .join(''),
      );
    }
    if (watcher.through < w.to) watcher.through = w.to;
  }
}
