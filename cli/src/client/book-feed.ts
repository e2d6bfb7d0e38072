// `gpux book --watch`: a copy of one book kept from the live feed
// (GET /v1/stream, docs/api/market-data.md "Keeping a copy of the book"):
// a snapshot replaces the copy; each level or trade must be numbered one
// more than the last applied, and is then applied; one numbered lower was
// already applied and is skipped; a higher one (or a heartbeat ahead of
// the copy) means something was missed, and the copy is dropped and taken
// again from a fresh snapshot (the stream reopened without Last-Event-ID).
// When the stream ends otherwise, it is reopened with Last-Event-ID, which
// resumes it or starts it with a snapshot.

import type { Schemas } from './api.js';
import type { BookView } from './render-market.js';

type S = Schemas;
type Level = S['Level'];

/** One server-sent event: its name, id and JSON data. */
export interface FeedEvent {
  readonly event: string;
  readonly id: string | undefined;
  readonly data: unknown;
}

/** Splits a text/event-stream body into its events (comments and unknown fields skipped). */
export async function* sseEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<FeedEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = 'message';
  let id: string | undefined;
  let data: string[] = [];
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, '');
      buffer = buffer.slice(nl + 1);
      if (line === '') {
        if (data.length > 0) {
          yield { event, id, data: JSON.parse(data.join('\n')) as unknown };
        }
        event = 'message';
        id = undefined;
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'id') id = value;
      else if (field === 'data') data.push(value);
    }
  }
}

/** The copy of a book: its levels by price, and the number of the last update in it. */
export interface BookCopy {
  readonly gpuType: string;
  readonly zone: string;
  sequence: number;
  readonly bids: Map<number, Level>;
  readonly asks: Map<number, Level>;
}

export function copyOf(s: S['FeedSnapshot']): BookCopy {
  return {
    gpuType: s.gpu_type,
    zone: s.zone,
    sequence: s.sequence,
    bids: new Map(s.bids.map((l) => [l.price, l])),
    asks: new Map(s.asks.map((l) => [l.price, l])),
  };
}

/** What an event did to the copy. */
export type Applied = 'snapshot' | 'applied' | 'skipped' | 'gap' | 'closed';

/** Applies one event of the feed to `copy` (undefined before the first snapshot). */
export function apply(
  copy: BookCopy | undefined,
  e: FeedEvent,
): { copy: BookCopy | undefined; applied: Applied } {
  const data = e.data as { sequence?: number };
  switch (e.event) {
    case 'snapshot':
      return { copy: copyOf(e.data as S['FeedSnapshot']), applied: 'snapshot' };
    case 'closed':
      return { copy, applied: 'closed' };
    case 'heartbeat':
      // A heartbeat names the last update sent: ahead of the copy, one was missed.
      if (copy === undefined) return { copy, applied: 'skipped' };
      return { copy, applied: (data.sequence ?? 0) > copy.sequence ? 'gap' : 'skipped' };
    case 'level':
    case 'trade': {
      if (copy === undefined || data.sequence === undefined) return { copy, applied: 'skipped' };
      if (data.sequence <= copy.sequence) return { copy, applied: 'skipped' };
      if (data.sequence > copy.sequence + 1) return { copy: undefined, applied: 'gap' };
      copy.sequence = data.sequence;
      if (e.event === 'level') {
        const l = e.data as S['FeedLevel'];
        const side = l.side === 'bid' ? copy.bids : copy.asks;
        if (l.gpus === 0) side.delete(l.price);
        else side.set(l.price, { price: l.price, gpus: l.gpus, orders: l.orders });
      }
      return { copy, applied: 'applied' };
    }
    default:
      return { copy, applied: 'skipped' };
  }
}

/** The copy as the book renderer shows it: bids highest first, asks lowest first, `depth` each. */
export function viewOf(copy: BookCopy, depth: number): BookView {
  return {
    gpu_type: copy.gpuType,
    zone: copy.zone,
    sequence: copy.sequence,
    bids: [...copy.bids.values()].sort((a, b) => b.price - a.price).slice(0, depth),
    asks: [...copy.asks.values()].sort((a, b) => a.price - b.price).slice(0, depth),
  };
}

/** Opens the stream (resuming after `lastId` when given) and yields its events. */
export type OpenFeed = (lastId: number | undefined) => Promise<AsyncIterable<FeedEvent>>;

/**
 * Follows the book until `signal` aborts: calls `event` with each event as
 * sent and `changed` with the copy after each change. The stream is
 * reopened when it ends (after `pause`), and anew (a fresh snapshot) on a gap.
 */
export async function followBook(o: {
  readonly open: OpenFeed;
  readonly signal: AbortSignal;
  readonly event: (e: FeedEvent) => void;
  readonly changed: (copy: BookCopy) => void;
  readonly pause: () => Promise<void>;
  /** A failure to open the stream: shown, then it is tried again. */
  readonly failed: (e: unknown) => void;
}): Promise<void> {
  let copy: BookCopy | undefined;
  while (!o.signal.aborted) {
    try {
      const events = await o.open(copy?.sequence);
      for await (const e of events) {
        if (o.signal.aborted) return;
        o.event(e);
        const next = apply(copy, e);
        copy = next.copy;
        if (next.applied === 'gap') {
          copy = undefined;
          break;
        }
        if (next.applied === 'closed') break;
        if (copy !== undefined && (next.applied === 'snapshot' || next.applied === 'applied')) {
          o.changed(copy);
        }
      }
    } catch (e) {
      if (o.signal.aborted) return;
      o.failed(e);
    }
    if (!o.signal.aborted) await o.pause();
  }
}
