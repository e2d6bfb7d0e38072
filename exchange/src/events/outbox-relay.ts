// The outbox relay (docs/architecture.md flow 2): publishes the events the write
// batches put in the `outbox` table, in the order they were written, and
// marks each published only once the publisher confirmed it is stored.
//
// - Nothing is lost while NATS is down: a row stays unpublished, and the
//   relay tries again with the same message id (the event id) until it is
//   stored. A publish sent while the client reconnects can be lost without
//   an error but its timeout, so a timeout is a failure too; a replay that
//   was in fact stored is deduplicated by the stream (duplicate window).
// - It resumes after a restart from the rows still unpublished.
// - Provision events get the lease's SSH key snapshot (lease_keys, written
//   by the same batch as the event) when they are published (D32).
// - It wakes when a batch with events commits (Market.onEvents), and polls
//   every `idleMs` besides, for events another exchange process wrote.

import { InvariantError } from '@gpux/shared';

import type { Database } from '../db/database.js';
import type { Logger } from '../logger.js';
import type { EventPublisher } from './publisher.js';
import { Waker, runRounds } from './waker.js';

export interface RelayOptions {
  readonly logger: Logger;
  /** Rows read per round. */
  readonly batchSize?: number;
  /** How often to look for rows when nobody wakes the relay. */
  readonly idleMs?: number;
  /**
   * A wake-up within this long of the last round waits for the rest of it,
   * so that under load one round takes the events of many write batches
   * (bench http: a round per batch cost PostgreSQL a query per batch).
   */
  readonly coalesceMs?: number;
  /** The first retry after a failed publish; doubles up to maxBackoffMs. */
  readonly backoffMs?: number;
  readonly maxBackoffMs?: number;
}

interface OutboxRead {
  seq: number;
  event_id: string;
  subject: string;
  /** The event as the batch wrote it (json kept as written, migration 0007). */
  payload: string;
  /** A provision event's key snapshot as a JSON array (D32); null for other events. */
  keys: string | null;
}

/**
 * A relay round in one statement (bench http: the relay's six statements a
 * round, and its JSON parsed and written again, were about a tenth of
 * PostgreSQL's CPU at 1,000 orders/s):
 *
 * - $1: the rows the last round published, marked now. The mark is not
 *   worth a WAL flush of its own (set_config(…, true): for this statement's
 *   transaction, whose commit then does not wait for the flush): lost in a
 *   crash, those rows are published again under the same message ids, which
 *   JetStream stores once (duplicate window) and agents handle once (D30).
 *   Waiting for the flush made the relay's commits compete with the books'
 *   write batches for the disk.
 * - the next $3 rows in order, excluding $1 (the statement sees the rows as
 *   they were before its own UPDATE), each with its payload as written (no
 *   JSON parsed but a provision event's lease id) and, for a provision event
 *   (its subject says so, shared/src/events.ts), the buyer's keys of the
 *   fill (lease_keys, written by the same batch as the event) in order.
 */
const ROUND_SQL = `WITH marked AS (
  UPDATE outbox SET published_ms = $2
   WHERE seq = ANY($1::bigint[])
     -- Run for each row marked, so whenever the statement writes at all.
     AND set_config('synchronous_commit', 'off', true) = 'off')
SELECT o.seq, o.event_id, o.subject, o.payload::text AS payload,
       CASE WHEN o.subject LIKE '%.lease.provision'
            THEN COALESCE((SELECT json_agg(k.public_key ORDER BY k.position) FROM lease_keys k
                            WHERE k.lease_id = o.payload->>'lease_id'), '[]')::text
       END AS keys
  FROM outbox o
 WHERE o.published_ms IS NULL AND o.seq <> ALL($1::bigint[])
 ORDER BY o.seq LIMIT $3`;

/** The event to publish: a provision event gets its key snapshot as `ssh_public_keys` (D32). */
export function eventBody(payload: string, keys: string | null): string {
  if (keys === null) return payload;
  // The payload is a JSON object with fields, as JSON.stringify wrote it
  // (market/lease-events.ts): the keys go in before its closing brace.
  const close = payload.lastIndexOf('}');
  if (close < 2 || !payload.startsWith('{')) {
    throw new InvariantError(`an outbox payload is not a JSON object: ${payload.slice(0, 80)}`);
  }
  return `${payload.slice(0, close)},"ssh_public_keys":${keys}}`;
}

export class OutboxRelay {
  private running = false;
  private stopped = false;
  private readonly waker = new Waker();
  private loop: Promise<void> | undefined;
  /** Rows stored by the stream and not yet marked published (seq). */
  private marks: number[] = [];
  /** Published since start, and publish attempts that failed (for operators). */
  readonly stats = { published: 0, failures: 0 };

  constructor(
    private readonly db: Database,
    private readonly publisher: EventPublisher,
    private readonly o: RelayOptions,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Events were committed: look now. */
  wake(): void {
    this.waker.wake();
  }

  /** Stop after the round in flight; unpublished rows wait for the next start. */
  async close(): Promise<void> {
    this.stopped = true;
    this.waker.wake();
    await this.loop;
    await this.flushMarks().catch((err: unknown) => {
      // Not lost: those rows are published again, under the same ids, by the next start (D30).
      this.o.logger.warn({ err }, 'marking the last published outbox rows failed');
    });
  }

  private run(): Promise<void> {
    return runRounds(
      this.waker,
      this.o,
      () => this.round(),
      (err, retryInMs) => {
        this.stats.failures++;
        this.o.logger.warn(
          { err, retryInMs },
          'publishing outbox events failed; they stay in the outbox and are tried again',
        );
      },
      () => this.stopped,
      20,
    );
  }

  /**
   * One round, one statement: mark what the last round published, and read
   * the next rows in order as the bodies to publish; true when there may be
   * more. Publishing waits for the stream's acks; the rows stored are marked
   * by the next round's statement (or by close()).
   */
  private async round(): Promise<boolean> {
    const limit = this.o.batchSize ?? 200;
    const marks = this.marks;
    const rows = await this.db.query<OutboxRead>(ROUND_SQL, [marks, Date.now(), limit], {
      name: 'gpux_relay_round',
    });
    // Marked (the statement committed): the rows read exclude them.
    if (this.marks === marks) this.marks = [];
    if (rows.length === 0) return false;
    // JetStream keeps the order of one connection's publishes; waiting for
    // all acks together costs one round trip per round, not per event.
    const results = await Promise.allSettled(
      rows.map((r) => this.publisher.publish(r.subject, r.event_id, eventBody(r.payload, r.keys))),
    );
    // Mark the prefix that is stored: a row is only marked after every row
    // before it, so the outbox's unpublished rows stay a suffix in order.
    let stored = 0;
    while (stored < results.length && results[stored]?.status === 'fulfilled') stored++;
    this.marks = [...this.marks, ...rows.slice(0, stored).map((r) => r.seq)];
    this.stats.published += stored;
    const failed = results.find((r) => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    return rows.length === limit;
  }

  /** Write the marks no round took yet (at close). */
  private async flushMarks(): Promise<void> {
    if (this.marks.length === 0) return;
    await this.db.query(ROUND_SQL, [this.marks, Date.now(), 0], { name: 'gpux_relay_round' });
    this.marks = [];
  }
}
