// A client of GET /v1/stream for tests, over real HTTP (node:http, a socket
// of its own per stream): it parses the server-sent events as they arrive
// and lets a test wait for the next one, or for one that matches. A copy of
// the book kept from the events (BookCopy) checks that every update is
// numbered one more than the last.

import http from 'node:http';
import type { IncomingMessage } from 'node:http';

export interface SseEvent {
  readonly id: string | undefined;
  readonly event: string;
  readonly data: Record<string, unknown>;
}

export class SseClient {
  /** Every event received, in order. */
  readonly events: SseEvent[] = [];
  /** Index of the next event next() returns. */
  private read = 0;
  private waiter: (() => void) | undefined;
  private buffer = '';
  private done = false;
  /** The body when the answer was not a stream (an error's JSON). */
  body = '';

  private constructor(
    readonly status: number,
    readonly headers: http.IncomingHttpHeaders,
    res: IncomingMessage,
    private readonly req: http.ClientRequest,
  ) {
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      if (status !== 200) this.body += chunk;
      else this.parse(chunk);
      this.wake();
    });
    const end = (): void => {
      this.done = true;
      this.wake();
    };
    res.on('end', end);
    res.on('close', end);
    res.on('error', end);
  }

  /** Opens a stream; resolves with the answer's status once its headers arrive. */
  static open(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
    return new Promise((resolve, reject) => {
      const req = http.get(url, { headers, agent: false }, (res) => {
        resolve(new SseClient(res.statusCode ?? 0, res.headers, res, req));
      });
      req.on('error', reject);
    });
  }

  /** The stream has ended (the exchange closed it, or close()). */
  get ended(): boolean {
    return this.done;
  }

  /** The next event not yet returned; undefined once the stream ended without one. */
  async next(): Promise<SseEvent | undefined> {
    for (;;) {
      const e = this.events[this.read];
      if (e !== undefined) {
        this.read++;
        return e;
      }
      if (this.done) return undefined;
      await new Promise<void>((r) => (this.waiter = r));
    }
  }

  /** The next event for which `match` holds (the ones before it are passed over). */
  async until(match: (e: SseEvent) => boolean): Promise<SseEvent> {
    for (;;) {
      const e = await this.next();
      if (e === undefined) throw new Error('the stream ended before the event came');
      if (match(e)) return e;
    }
  }

  /** The whole body of an answer that is not a stream (an error's JSON). */
  async text(): Promise<string> {
    while (!this.done) await new Promise<void>((r) => (this.waiter = r));
    return this.body;
  }

  close(): void {
    this.req.destroy();
    this.done = true;
    this.wake();
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  private parse(chunk: string): void {
    this.buffer += chunk;
    let end = this.buffer.indexOf('\n\n');
    while (end >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      end = this.buffer.indexOf('\n\n');
      let id: string | undefined;
      let event = 'message';
      let data: string | undefined;
      for (const line of block.split('\n')) {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') id = value;
        else if (field === 'event') event = value;
        else if (field === 'data') data = data === undefined ? value : `${data}\n${value}`;
      }
      // A block without data (retry:) dispatches nothing.
      if (data === undefined) continue;
      this.events.push({ id, event, data: JSON.parse(data) as Record<string, unknown> });
    }
  }
}

export interface CopyLevel {
  readonly price: number;
  readonly gpus: number;
  readonly orders: number;
}

/** A book kept from the feed's events, as a client following the docs keeps it. */
export class BookCopy {
  sequence: number | undefined;
  readonly bids = new Map<number, CopyLevel>();
  readonly asks = new Map<number, CopyLevel>();
  snapshots = 0;
  trades = 0;

  /** Apply one event; throws on an update that is not numbered one more than the last. */
  apply(e: SseEvent): void {
    const d = e.data;
    const seq = d['sequence'] as number;
    if (e.id !== undefined && Number(e.id) !== seq) {
      throw new Error(`event id ${e.id} but sequence ${seq}`);
    }
    switch (e.event) {
      case 'snapshot':
        this.snapshots++;
        this.bids.clear();
        this.asks.clear();
        for (const l of d['bids'] as CopyLevel[]) this.bids.set(l.price, l);
        for (const l of d['asks'] as CopyLevel[]) this.asks.set(l.price, l);
        this.sequence = seq;
        return;
      case 'heartbeat':
        if (seq !== this.sequence)
          throw new Error(`heartbeat at ${seq}, the copy at ${this.sequence}`);
        return;
      case 'level':
      case 'trade': {
        if (this.sequence === undefined || seq !== this.sequence + 1) {
          throw new Error(`gap: ${e.event} ${seq} after ${this.sequence}`);
        }
        this.sequence = seq;
        if (e.event === 'trade') {
          this.trades++;
          return;
        }
        const side = d['side'] === 'bid' ? this.bids : this.asks;
        const price = d['price'] as number;
        if (d['gpus'] === 0) side.delete(price);
        else side.set(price, { price, gpus: d['gpus'] as number, orders: d['orders'] as number });
        return;
      }
      default:
        throw new Error(`unexpected event ${e.event}`);
    }
  }

  /** The best `depth` levels of each side, as GET /v1/orderbook lists them. */
  top(depth: number): { bids: CopyLevel[]; asks: CopyLevel[] } {
    return {
      bids: [...this.bids.values()].sort((a, b) => b.price - a.price).slice(0, depth),
      asks: [...this.asks.values()].sort((a, b) => a.price - b.price).slice(0, depth),
    };
  }
}
