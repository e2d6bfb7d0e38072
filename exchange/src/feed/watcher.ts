// One client of the live feed (GET /v1/stream): where its bytes go, how far
// it has been sent, and how it is let go. A watcher never holds more than a
// bound of bytes the exchange could not yet hand to its socket: past it the
// watcher is dropped with a `closed` event saying so, rather than buffered
// without end (docs/api/market-data.md, "Slow clients").

import type { CloseReason } from '../views/feed.js';
import { sseEvent } from './sse.js';

/** What a watcher writes to: the HTTP response (node:http's ServerResponse). */
export interface FeedSink {
  write(chunk: Buffer | string): unknown;
  end(): unknown;
  destroy(): unknown;
  /** Bytes written and not yet handed to the operating system. */
  readonly writableLength: number;
  readonly writableEnded: boolean;
  readonly destroyed: boolean;
}

/** A dropped client that does not read its last bytes is cut off after this long. */
const CLOSE_GRACE_MS = 10_000;

const MESSAGES: Readonly<Record<CloseReason, string>> = {
  slow_consumer:
    'the stream fell too far behind (the client reads slower than the book changes); reconnect with Last-Event-ID',
  unavailable:
    'this exchange process stops serving the market (shutting down or handing over); reconnect shortly',
};

export class Watcher {
  /** The sequence number of the last update this watcher has been sent. */
  through = 0;
  private gone = false;

  constructor(
    private readonly sink: FeedSink,
    private readonly maxBufferedBytes: number,
    /** Called once, when the watcher leaves (dropped, closed or disconnected). */
    private readonly onGone: (w: Watcher) => void,
  ) {}

  get closed(): boolean {
    return this.gone;
  }

  /** Write `chunk`; drops the watcher (and says so) when it has fallen too far behind. */
  send(chunk: Buffer | string): void {
    if (this.gone) return;
    if (this.sink.destroyed || this.sink.writableEnded) {
      this.left();
      return;
    }
    this.sink.write(chunk);
    if (this.sink.writableLength > this.maxBufferedBytes) this.close('slow_consumer');
  }

  /** End the stream with a last `closed` event. */
  close(reason: CloseReason): void {
    if (this.gone) return;
    this.left();
    const sink = this.sink;
    if (sink.destroyed || sink.writableEnded) return;
    sink.write(sseEvent('closed', { type: 'closed', reason, message: MESSAGES[reason] }));
    sink.end();
    // A client that reads nothing more would keep the socket and its bytes.
    const timer = setTimeout(() => {
      if (!sink.destroyed) sink.destroy();
    }, CLOSE_GRACE_MS);
    timer.unref();
  }

  /** The client went away (its connection closed). */
  left(): void {
    if (this.gone) return;
    this.gone = true;
    this.onGone(this);
  }
}
