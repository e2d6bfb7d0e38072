// The streams of GET /v1/account/stream this process serves (issue 22,
// docs/api/account-events.md). Each stream sends its account's events in
// order from a position (Last-Event-ID, or the account's last event when the
// stream opens), reading them from account_events a page at a time and no
// faster than its client takes them: a slow client holds at most one page of
// bytes, never a backlog.
//
// Wake-up: the numberer of this process (numberer.ts, D35) says which
// accounts' counters it advanced as soon as it commits; besides, while any
// stream is open, one query every POLL_MS reads the counters
// (account_event_heads) of every account watched, whichever process
// numbered their events; a stream whose account has moved reads the new
// events (a stream is at most POLL_MS behind). The events are committed before they are read, so what a
// stream sends is never rolled back, and it survives a restart.

import type { Database } from '../db/database.js';
import { sseEvent } from '../feed/sse.js';
import type { FeedSink } from '../feed/watcher.js';
import { accountEventJson } from '../views/account-events.js';
import type { AccountEventRow } from '../views/account-events.js';

/** How often the counters of the accounts watched are read (ms). */
export const POLL_MS = 250;
/** A `heartbeat` every this long (ms). */
export const HEARTBEAT_MS = 15_000;
/** Events read at once: at most this many are in a stream's buffers. */
const PAGE = 200;
/** Streams one account may have open at once (one more is rate_limited). */
export const STREAMS_PER_ACCOUNT = 5;

/** The socket this stream writes to, with what it needs to wait for it. */
export interface StreamSink extends FeedSink {
  once(event: 'drain' | 'close', listener: () => void): unknown;
}

class AccountStream {
  /** The number of the last event sent. */
  sent: number;
  /** The account's last event number as last read (the stream reads up to it). */
  head: number;
  private pumping = false;
  private gone = false;
  private lastWrite = Date.now();

  constructor(
    readonly accountId: string,
    from: number,
    head: number,
    private readonly sink: StreamSink,
    private readonly db: Database,
    private readonly onGone: (s: AccountStream) => void,
  ) {
    this.sent = from;
    this.head = head;
  }

  get closed(): boolean {
    return this.gone;
  }

  write(chunk: string): boolean {
    if (this.sink.destroyed || this.sink.writableEnded) {
      this.left();
      return false;
    }
    this.lastWrite = Date.now();
    return this.sink.write(chunk) !== false;
  }

  heartbeat(now: number): void {
    if (!this.pumping && now - this.lastWrite >= HEARTBEAT_MS) {
      this.write(sseEvent('heartbeat', { seq: this.sent }));
    }
  }

  /** The account's last number is at least `head`: send what is not sent yet. */
  moved(head: number): void {
    if (head > this.head) this.head = head;
    if (this.head > this.sent) void this.pump();
  }

  private async pump(): Promise<void> {
    if (this.pumping || this.gone) return;
    this.pumping = true;
    try {
      while (!this.gone && this.head > this.sent) {
        const rows = await this.db.query<AccountEventRow>(
          `SELECT seq, event_id, kind, payload::text AS payload, created_ms FROM account_events
            WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT ${PAGE}`,
          [this.accountId, this.sent],
          { name: 'gpux_account_events_after' },
        );
        if (rows.length === 0) return;
        let flowing = true;
        for (const r of rows) {
          if (this.gone) return;
          flowing = this.write(`id: ${r.seq}\nevent: ${r.kind}\ndata: ${accountEventJson(r)}\n\n`);
          this.sent = r.seq;
        }
        if (this.sent > this.head) this.head = this.sent;
        if (!flowing) await this.drained();
      }
    } catch {
      // The database is gone (a shutdown): the client reconnects with Last-Event-ID.
      this.close();
    } finally {
      this.pumping = false;
    }
  }

  private drained(): Promise<void> {
    return new Promise((resolve) => {
      this.sink.once('drain', resolve);
      this.sink.once('close', resolve);
    });
  }

  close(): void {
    if (this.gone) return;
    this.left();
    if (this.sink.destroyed || this.sink.writableEnded) return;
    this.sink.write(
      sseEvent('closed', {
        type: 'closed',
        reason: 'unavailable',
        message: 'this exchange process is shutting down; reconnect with Last-Event-ID',
      }),
    );
    this.sink.end();
  }

  left(): void {
    if (this.gone) return;
    this.gone = true;
    this.onGone(this);
  }
}

export type OpenResult =
  { ok: true; stream: AccountStream } | { ok: false; code: 'too_many' | 'past_head'; head: number };

export class AccountStreams {
  private readonly open = new Set<AccountStream>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  constructor(private readonly db: Database) {}

  /** Open streams of `accountId`. */
  count(accountId: string): number {
    let n = 0;
    for (const s of this.open) if (s.accountId === accountId) n++;
    return n;
  }

  /** The account's last event number (0: none yet). */
  async headOf(accountId: string): Promise<number> {
    const [row] = await this.db.query<{ seq: number }>(
      'SELECT seq FROM account_event_heads WHERE account_id = $1',
      [accountId],
    );
    return row?.seq ?? 0;
  }

  /** The first event number still kept after `after` (retention deletes old ones). */
  async firstAfter(accountId: string, after: number): Promise<number | undefined> {
    const [row] = await this.db.query<{ seq: number }>(
      'SELECT min(seq) AS seq FROM account_events WHERE account_id = $1 AND seq > $2',
      [accountId, after],
    );
    return row?.seq ?? undefined;
  }

  /**
   * Start a stream of `accountId` on `sink` after event `after` (undefined:
   * after the account's last event). Refused when the account has its
   * share of streams open, or `after` is past its last event.
   */
  async start(accountId: string, after: number | undefined, sink: StreamSink): Promise<OpenResult> {
    const head = await this.headOf(accountId);
    if (this.count(accountId) >= STREAMS_PER_ACCOUNT) return { ok: false, code: 'too_many', head };
    if (after !== undefined && after > head) return { ok: false, code: 'past_head', head };
    const from = after ?? head;
    const first = from < head ? await this.firstAfter(accountId, from) : undefined;
    const stream = new AccountStream(accountId, from, head, sink, this.db, (s) => {
      this.open.delete(s);
      if (this.open.size === 0) this.stop();
    });
    this.open.add(stream);
    sink.once('close', () => stream.left());
    stream.write(sseEvent('ready', { seq: from }, from));
    // Events deleted by retention since `from`: said, then the stream goes on.
    if (first !== undefined && first > from + 1) {
      stream.write(sseEvent('gap', { from: from + 1, to: first - 1 }));
    }
    stream.moved(head);
    this.run();
    return { ok: true, stream };
  }

  /** Events were numbered (numberer.ts): the streams of those accounts send them now. */
  numbered(heads: readonly { account_id: string; seq: number }[]): void {
    if (this.open.size === 0) return;
    const byAccount = new Map(heads.map((h) => [h.account_id, h.seq]));
    for (const s of this.open) {
      const head = byAccount.get(s.accountId);
      if (head !== undefined) s.moved(head);
    }
  }

  /** End every stream with a `closed` event (a drain or a close of the app). */
  closeAll(): void {
    for (const s of [...this.open]) s.close();
    this.stop();
  }

  get size(): number {
    return this.open.size;
  }

  private run(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.poll(), POLL_MS);
    this.timer.unref();
  }

  private stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async poll(): Promise<void> {
    if (this.polling || this.open.size === 0) return;
    this.polling = true;
    try {
      const accounts = [...new Set([...this.open].map((s) => s.accountId))];
      const rows = await this.db.query<{ account_id: string; seq: number }>(
        'SELECT account_id, seq FROM account_event_heads WHERE account_id = ANY($1::text[])',
        [accounts],
      );
      const heads = new Map(rows.map((r) => [r.account_id, r.seq]));
      const now = Date.now();
      for (const s of this.open) {
        s.moved(heads.get(s.accountId) ?? 0);
        s.heartbeat(now);
      }
    } catch {
      // The next poll tries again (the database may be restarting).
    } finally {
      this.polling = false;
    }
  }
}
