// The outbox relay (architecture.md flow 2): publishes the events the write
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

import type { LeaseEvent } from '@gpux/shared';

import type { Database } from '../db/database.js';
import type { Logger } from '../logger.js';
import type { StoredProvisionEvent } from '../market/rows.js';
import type { EventPublisher } from './publisher.js';

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
  payload: StoredProvisionEvent | Exclude<LeaseEvent, { kind: 'lease.provision' }>;
}

export class OutboxRelay {
  private running = false;
  private stopped = false;
  private wakeUp: (() => void) | undefined;
  private woken = false;
  private loop: Promise<void> | undefined;
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
    this.woken = true;
    this.wakeUp?.();
  }

  /** Stop after the round in flight; unpublished rows wait for the next start. */
  async close(): Promise<void> {
    this.stopped = true;
    this.wakeUp?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    let backoff = this.o.backoffMs ?? 100;
    while (!this.stopped) {
      let more = false;
      try {
        more = await this.round();
        backoff = this.o.backoffMs ?? 100;
      } catch (err) {
        this.stats.failures++;
        this.o.logger.warn(
          { err, retryInMs: backoff },
          'publishing outbox events failed; they stay in the outbox and are tried again',
        );
        await this.sleep(backoff);
        backoff = Math.min(backoff * 2, this.o.maxBackoffMs ?? 5_000);
        continue;
      }
      if (!more) {
        const roundAt = Date.now();
        await this.sleep(this.o.idleMs ?? 250);
        const early = roundAt + (this.o.coalesceMs ?? 20) - Date.now();
        if (early > 0 && !this.stopped) await new Promise((r) => setTimeout(r, early));
      }
    }
  }

  /** One round: publish up to batchSize rows in order; true when there may be more. */
  private async round(): Promise<boolean> {
    const limit = this.o.batchSize ?? 200;
    const rows = await this.db.query<OutboxRead>(
      `SELECT seq, event_id, subject, payload FROM outbox
        WHERE published_ms IS NULL ORDER BY seq LIMIT $1`,
      [limit],
    );
    if (rows.length === 0) return false;
    const keys = await this.keysOf(rows);
    // JetStream keeps the order of one connection's publishes; waiting for
    // all acks together costs one round trip per round, not per event.
    const results = await Promise.allSettled(
      rows.map((r) =>
        this.publisher.publish(r.subject, r.event_id, JSON.stringify(this.complete(r, keys))),
      ),
    );
    // Mark the prefix that is stored: a row is only marked after every row
    // before it, so the outbox's unpublished rows stay a suffix in order.
    let stored = 0;
    while (stored < results.length && results[stored]?.status === 'fulfilled') stored++;
    if (stored > 0) {
      // The mark is not worth a WAL flush of its own: lost in a crash, its
      // rows are published again under the same message ids, which JetStream
      // stores once (duplicate window) and agents handle once (D30). Waiting
      // for the flush made the relay's commits compete with the books' write
      // batches for the disk (bench http: 0.9 commits per order).
      const seqs = rows.slice(0, stored).map((r) => r.seq);
      await this.db.transaction(async (tx) => {
        await tx.query('SET LOCAL synchronous_commit = off');
        await tx.query('UPDATE outbox SET published_ms = $2 WHERE seq = ANY($1::bigint[])', [
          seqs,
          Date.now(),
        ]);
      });
      this.stats.published += stored;
    }
    const failed = results.find((r) => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    return rows.length === limit;
  }

  /** The SSH key snapshots of the provision events among `rows`. */
  private async keysOf(rows: readonly OutboxRead[]): Promise<Map<string, string[]>> {
    const leaseIds = rows
      .filter((r) => r.payload.kind === 'lease.provision')
      .map((r) => r.payload.lease_id);
    const out = new Map<string, string[]>();
    if (leaseIds.length === 0) return out;
    const keys = await this.db.query<{ lease_id: string; public_key: string }>(
      `SELECT lease_id, public_key FROM lease_keys WHERE lease_id = ANY($1::text[])
        ORDER BY lease_id, position`,
      [leaseIds],
    );
    for (const k of keys) {
      let list = out.get(k.lease_id);
      if (list === undefined) out.set(k.lease_id, (list = []));
      list.push(k.public_key);
    }
    return out;
  }

  private complete(r: OutboxRead, keys: ReadonlyMap<string, string[]>): LeaseEvent {
    if (r.payload.kind !== 'lease.provision') return r.payload;
    return { ...r.payload, ssh_public_keys: keys.get(r.payload.lease_id) ?? [] };
  }

  private sleep(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = () => {
        this.wakeUp = undefined;
        this.woken = false;
        done();
      };
    });
  }
}
