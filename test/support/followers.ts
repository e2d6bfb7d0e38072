// Clients of the exchange's two event streams as a program that knows only
// docs/api/market-data.md and docs/api/account-events.md keeps them: over
// real HTTP (exchange/src/feed/testing/sse-client.ts), each event read as it
// arrives, every number checked, and a reconnect with Last-Event-ID after the
// connection is lost. What breaks the documented numbering is kept as
// `problem` and fails the next wait.

import { BookCopy, SseClient } from '../../exchange/src/feed/testing/sse-client.js';
import type { SseEvent } from '../../exchange/src/feed/testing/sse-client.js';
import { until } from './until.js';

/** Reads `client` until it ends, handing each event to `take`; a throw stops it and is kept. */
async function pump(
  client: SseClient,
  take: (e: SseEvent) => void,
  failed: (why: string) => void,
): Promise<void> {
  for (;;) {
    const e = await client.next();
    if (e === undefined) return;
    try {
      take(e);
    } catch (err) {
      failed(err instanceof Error ? err.message : String(err));
      client.close();
      return;
    }
  }
}

/**
 * A copy of one book kept from `GET /v1/stream` (docs/api/market-data.md,
 * "Keeping a copy of the book").
 */
export class FeedFollower {
  readonly copy = new BookCopy();
  /** What the stream did against the docs, if anything. */
  problem: string | undefined;
  /** The number of every `level` and `trade` applied, in order, across connections. */
  readonly updates: number[] = [];
  /** Each connection's first event after `retry:` (a `snapshot`, or the next update). */
  readonly firstEvents: SseEvent[] = [];
  private client: SseClient | undefined;

  constructor(
    private readonly gpuType: string,
    private readonly zone: string,
  ) {}

  /** Opens the stream at `url`; with `lastEventId`, resuming after it. */
  async connect(url: string, lastEventId?: number): Promise<void> {
    this.client?.close();
    const query = `gpu_type=${this.gpuType}&zone=${this.zone}`;
    const client = await SseClient.open(
      `${url}/v1/stream?${query}`,
      lastEventId === undefined ? {} : { 'last-event-id': String(lastEventId) },
    );
    if (client.status !== 200) throw new Error(`stream: ${client.status} ${await client.text()}`);
    this.client = client;
    let first = true;
    void pump(
      client,
      (e) => {
        if (first && e.event !== 'heartbeat') this.firstEvents.push(e);
        if (e.event !== 'heartbeat') first = false;
        this.take(e);
      },
      (why) => (this.problem ??= why),
    );
  }

  /** The id of the last event applied: what a reconnect sends as Last-Event-ID. */
  get lastId(): number {
    const s = this.copy.sequence;
    if (s === undefined) throw new Error('no event applied yet');
    return s;
  }

  /** Waits until the copy is at update `sequence` (throws on a problem, or past it). */
  async reach(sequence: number, output: () => string): Promise<void> {
    await until(
      `the feed's copy at sequence ${sequence} (it is at ${this.copy.sequence})`,
      () => {
        if (this.problem !== undefined) throw new Error(`feed: ${this.problem}`);
        const at = this.copy.sequence ?? -1;
        if (at > sequence) throw new Error(`feed: copy at ${at}, past ${sequence}`);
        return at === sequence;
      },
      { output },
    );
  }

  close(): void {
    this.client?.close();
  }

  private take(e: SseEvent): void {
    const before = this.copy.sequence;
    const seq = e.data['sequence'] as number;
    // A snapshot carries the current number: never one below what the copy had.
    if (e.event === 'snapshot' && before !== undefined && seq < before) {
      throw new Error(`snapshot at ${seq} after the copy reached ${before}`);
    }
    // Checks each level and trade is the copy's number plus one.
    this.copy.apply(e);
    if (e.event === 'level' || e.event === 'trade') this.updates.push(seq);
  }
}

/** An account event as the stream sends it (docs/api/account-events.md, "The events"). */
export interface AccountEvent {
  readonly id: string;
  readonly seq: number;
  readonly type: string;
  readonly data: Record<string, unknown>;
}

/** `GET /v1/account/stream` read by an account's program that remembers the last number it handled. */
export class AccountFollower {
  /** Every event handled, across connections, in the order received. */
  readonly events: AccountEvent[] = [];
  /** Each connection's `ready` number. */
  readonly readies: number[] = [];
  problem: string | undefined;
  private client: SseClient | undefined;

  constructor(private readonly token: string) {}

  /** The number of the last event handled (0 before any). */
  get last(): number {
    return this.events.at(-1)?.seq ?? 0;
  }

  /** Opens the stream at `url` with Last-Event-ID: the last number handled. */
  async connect(url: string): Promise<void> {
    this.client?.close();
    const client = await SseClient.open(`${url}/v1/account/stream`, {
      authorization: `Bearer ${this.token}`,
      'last-event-id': String(this.last),
    });
    if (client.status !== 200) throw new Error(`account stream: ${client.status}`);
    this.client = client;
    void pump(
      client,
      (e) => this.take(e),
      (why) => (this.problem ??= why),
    );
  }

  /** Waits until an event matching `match` was handled; returns it. */
  async waitFor(
    what: string,
    match: (e: AccountEvent) => boolean,
    output: () => string,
  ): Promise<AccountEvent> {
    return until(
      `the account stream to send ${what}`,
      () => {
        if (this.problem !== undefined) throw new Error(`account stream: ${this.problem}`);
        return this.events.find(match);
      },
      { output, timeoutMs: 30_000 },
    );
  }

  /** Waits until the order's `order.cancelled` was handled. */
  async cancellation(orderId: string, output: () => string): Promise<AccountEvent> {
    return this.waitFor(
      `${orderId}'s cancellation`,
      (e) => e.type === 'order.cancelled' && e.data['order_id'] === orderId,
      output,
    );
  }

  close(): void {
    this.client?.close();
  }

  private take(e: SseEvent): void {
    if (e.event === 'heartbeat') return;
    if (e.event === 'ready') {
      // The number the stream goes on from: the one this client sent.
      const seq = e.data['seq'] as number;
      if (seq !== this.last || e.id !== String(seq)) {
        throw new Error(`ready at ${seq} (id ${e.id}) after handling ${this.last}`);
      }
      this.readies.push(seq);
      return;
    }
    if (e.event === 'gap') throw new Error(`gap ${JSON.stringify(e.data)}`);
    const event = e.data as unknown as AccountEvent;
    if (event.seq !== this.last + 1 || e.id !== String(event.seq) || e.event !== event.type) {
      throw new Error(`${e.event} id ${e.id} seq ${event.seq} after ${this.last}`);
    }
    this.events.push(event);
  }
}
