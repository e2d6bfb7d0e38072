// `gpux events`: the account's own events read from GET /v1/account/stream
// (docs/api/account-events.md). Every event has the account's next number;
// the stream starts after the number given as Last-Event-ID (without one,
// after the account's last event, which its first `ready` event names). When
// the stream ends (the exchange closed it, restarted, or the network
// failed) it is opened again with Last-Event-ID set to the last number
// handled, so no event is missed or shown twice; a `gap` says events were
// no longer kept and the stream goes on after them.

import type { FeedEvent } from './book-feed.js';
import { ApiError } from './exit.js';
import type { AccountEvent } from './render-data.js';

/** Opens the stream after event `lastId` (undefined: after the account's last), ended by `signal`. */
export type OpenAccountStream = (
  lastId: number | undefined,
  signal: AbortSignal,
) => Promise<AsyncIterable<FeedEvent>>;

function seqOf(data: unknown): number | undefined {
  const seq = (data as { seq?: unknown } | null)?.seq;
  return typeof seq === 'number' && Number.isInteger(seq) ? seq : undefined;
}

/** The account's last event number: the `ready` of a stream opened without Last-Event-ID. */
export async function headOf(open: OpenAccountStream): Promise<number> {
  const stop = new AbortController();
  try {
    for await (const e of await open(undefined, stop.signal)) {
      const seq = seqOf(e.data);
      if (e.event === 'ready' && seq !== undefined) return seq;
    }
    throw new Error('the account stream ended before its ready event');
  } finally {
    stop.abort();
  }
}

/** A failure that opening the stream again cannot mend: a 4xx other than 429. */
function lasting(e: unknown): boolean {
  return e instanceof ApiError && e.status >= 400 && e.status < 500 && e.status !== 429;
}

export interface FollowAccount {
  readonly open: OpenAccountStream;
  readonly signal: AbortSignal;
  /** Start after this event number; undefined: after the account's last (live only). */
  readonly after: number | undefined;
  /** Stop once this number is handled; undefined: follow until `signal` aborts. */
  readonly until?: number | undefined;
  readonly event: (e: AccountEvent) => void;
  /** Events `from`…`to` are no longer kept (retention). */
  readonly gap: (from: number, to: number) => void;
  readonly pause: () => Promise<void>;
  /**
   * A failure to open the stream, when following (`until` undefined): shown,
   * then it is tried again. Without following, and for a lasting failure
   * (a 4xx other than 429), it is thrown instead.
   */
  readonly failed: (e: unknown) => void;
}

/** Reads the account's events in order from `after` on; resolves when done or aborted. */
export async function followAccount(o: FollowAccount): Promise<void> {
  let last = o.after;
  const done = (): boolean =>
    o.signal.aborted || (o.until !== undefined && last !== undefined && last >= o.until);
  let opened = false;
  while (!done()) {
    try {
      const events = await o.open(last, o.signal);
      opened = true;
      for await (const e of events) {
        if (o.signal.aborted) return;
        const seq = seqOf(e.data);
        if (e.event === 'closed') break;
        if (e.event === 'ready') {
          if (last === undefined) last = seq;
        } else if (e.event === 'gap') {
          const range = e.data as { from?: number; to?: number };
          if (typeof range.from === 'number' && typeof range.to === 'number') {
            o.gap(range.from, range.to);
            if (last === undefined || range.to > last) last = range.to;
          }
        } else if (e.event !== 'heartbeat' && seq !== undefined) {
          if (last !== undefined && seq <= last) continue;
          last = seq;
          o.event(e.data as AccountEvent);
        }
        if (done()) return;
      }
    } catch (e) {
      if (o.signal.aborted) return;
      if (!opened || o.until !== undefined || lasting(e)) throw e;
      o.failed(e);
    }
    if (!done()) await o.pause();
  }
}
