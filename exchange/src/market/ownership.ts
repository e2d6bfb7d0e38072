// Who writes a database's market (docs/ownership.md). Exactly one process
// does: the one holding every book's row of `market_owners` (migration
// 0013). It renews a lease on the database's clock; another process on the
// same database stands by and takes the books over once the lease lapses,
// raising each book's epoch. Every write batch names the epochs its writer
// acquired and commits only while they are current (`gpux_fence`, checked
// in the batch's own statement), so an owner that was paused past its lease
// or cut off from the database can no longer write when it comes back, even
// if it still believes it owns the books. A session advisory lock alone
// would not do: a lost connection frees it while the process carries on.

import { randomUUID } from 'node:crypto';

import { GPU_TYPES, GpuxError, ZONES } from '@gpux/shared';

import type { Database } from '../db/database.js';

/** Every book of the exchange, as `market_owners.book` names it. */
export const ALL_BOOKS: readonly string[] = GPU_TYPES.flatMap((g) => ZONES.map((z) => `${g}/${z}`));

/** The advisory lock key of `gpux_fence` (migration 0013): acquisitions take it exclusively. */
const FENCE_LOCK_KEY = 4_712_026;

/** SQLSTATE that `gpux_fence` raises. */
export const FENCED_SQLSTATE = 'GX001';

export interface OwnerIdentity {
  /** GPUX_INSTANCE_ID (D23). */
  readonly instanceId: string;
  readonly host: string;
  /**
   * The machine and process namespace (boot id, pid namespace): where a pid
   * means one process. Null where that cannot be read.
   */
  readonly hostKey: string | null;
  readonly pid: number;
  /** The HTTP URL of the process, for people reading who owns the market. */
  url: string | undefined;
}

/** The holder of the books as a standby sees it. */
export interface Holder {
  readonly instanceId: string | null;
  readonly host: string | null;
  readonly hostKey: string | null;
  readonly pid: number | null;
  readonly url: string | null;
  readonly epoch: number;
  /** How long its lease still runs, by the database's clock (≤ 0: lapsed). */
  readonly leaseRemainingMs: number;
}

export type Acquisition =
  | { readonly acquired: true; readonly epochs: ReadonlyMap<string, number> }
  | { readonly acquired: false; readonly holder: Holder };

export interface OwnershipOptions {
  /** How long a renewal keeps the books (GPUX_OWNER_LEASE_SECONDS). */
  readonly leaseMs: number;
  /**
   * May this process take books whose lease has not lapsed, because their
   * holder is a process of this host that no longer runs (a restart after
   * a crash)? Asked only at start.
   */
  readonly isGone?: (holder: Holder) => boolean;
}

interface OwnerRow {
  book: string;
  epoch: number;
  owner_id: string | null;
  instance_id: string | null;
  host: string | null;
  host_key: string | null;
  pid: number | null;
  url: string | null;
  remaining_ms: number | null;
}

/** The process is no longer the books' owner: a write was fenced, or a renewal found another. */
export class OwnershipLost extends Error {
  override readonly name = 'OwnershipLost';
}

/** A write batch's fence: what it names, and what to do when it finds the fence closed. */
export interface Fence {
  /** The `gpux_fence` parameter of a batch writing these books. */
  tokenFor(books: readonly string[]): string;
  /** A batch was refused by the fence: this process lost the market. */
  fenced(): void;
}

/** Is `err` the refusal of `gpux_fence`? */
export function isFencedError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && 'code' in err && err.code === FENCED_SQLSTATE;
}

/** What a fenced batch's callers get: 503, the request did not happen and may be retried. */
export function fencedError(): GpuxError {
  return new GpuxError(
    'unavailable',
    'this exchange process no longer owns the market (another took over); retry shortly',
  );
}

const holderOf = (r: OwnerRow): Holder => ({
  instanceId: r.instance_id,
  host: r.host,
  hostKey: r.host_key,
  pid: r.pid,
  url: r.url,
  epoch: r.epoch,
  leaseRemainingMs: r.owner_id === null ? 0 : (r.remaining_ms ?? 0),
});

const READ_SQL = `SELECT book, epoch, owner_id, instance_id, host, host_key, pid, url,
       (extract(epoch FROM lease_until - clock_timestamp()) * 1000)::float8 AS remaining_ms
  FROM market_owners WHERE book = ANY($1::text[]) ORDER BY book`;

/**
 * The ownership record of this process: acquire, renew, release, and the
 * epochs its write batches name. Holds no timers: the steward
 * (market/steward.ts) decides when to call what.
 */
export class MarketOwnership {
  /** A fresh id per acquisition: renewals and releases name it. */
  private ownerId: string | undefined;
  private epochs: ReadonlyMap<string, number> = new Map();

  constructor(
    private readonly db: Database,
    readonly identity: OwnerIdentity,
    private readonly o: OwnershipOptions,
    readonly books: readonly string[] = ALL_BOOKS,
  ) {}

  get leaseMs(): number {
    return this.o.leaseMs;
  }

  /** The epoch of each book while this process owns them. */
  get held(): ReadonlyMap<string, number> {
    return this.epochs;
  }

  /** The books' holder right now, read without a lock (a standby's look). */
  async holder(): Promise<Holder | undefined> {
    const rows = await this.db.query<OwnerRow>(READ_SQL, [this.books]);
    return this.blocking(rows, false);
  }

  /**
   * The row that keeps this process from owning every book, if any: one
   * held by another owner whose lease runs (`atStart`: unless that owner is
   * a process of this host that is gone).
   */
  private blocking(rows: readonly OwnerRow[], atStart: boolean): Holder | undefined {
    for (const r of rows) {
      if (r.owner_id === null || (r.remaining_ms ?? 0) <= 0) continue;
      const h = holderOf(r);
      if (atStart && this.o.isGone?.(h) === true) continue;
      return h;
    }
    return undefined;
  }

  /**
   * Take every book if none is held by a live lease (`atStart`: or by a
   * process of this host that is gone), raising each epoch. The exclusive
   * fence lock makes the previous owner's batches that passed their fence
   * commit before this does, and the ones after it fail: when this resolves
   * acquired, the database holds everything the previous owner acknowledged.
   */
  async tryAcquire(atStart = false): Promise<Acquisition> {
    // Look first without a lock: a standby polling must not stall the
    // owner's write batches behind the exclusive lock.
    const seen = await this.holder();
    if (seen !== undefined && !(atStart && this.o.isGone?.(seen) === true)) {
      return { acquired: false, holder: seen };
    }
    const ownerId = randomUUID();
    const result = await this.db.transaction(async (tx): Promise<Acquisition> => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [FENCE_LOCK_KEY]);
      await tx.query(
        'INSERT INTO market_owners (book) SELECT unnest($1::text[]) ON CONFLICT (book) DO NOTHING',
        [this.books],
      );
      const rows = await tx.query<OwnerRow>(`${READ_SQL} FOR UPDATE`, [this.books]);
      const blocked = this.blocking(rows, atStart);
      if (blocked !== undefined) return { acquired: false, holder: blocked };
      const taken = await tx.query<{ book: string; epoch: number }>(
        `UPDATE market_owners
            SET epoch = epoch + 1, owner_id = $2, instance_id = $3, host = $4, pid = $5, url = $6,
                lease_until = clock_timestamp() + $7 * interval '1 millisecond', host_key = $8
          WHERE book = ANY($1::text[]) RETURNING book, epoch`,
        [
          this.books,
          ownerId,
          this.identity.instanceId,
          this.identity.host,
          this.identity.pid,
          this.identity.url ?? null,
          this.o.leaseMs,
          this.identity.hostKey,
        ],
      );
      return { acquired: true, epochs: new Map(taken.map((r) => [r.book, Number(r.epoch)])) };
    });
    if (result.acquired) {
      this.ownerId = ownerId;
      this.epochs = result.epochs;
    }
    return result;
  }

  /**
   * Extend the lease. Throws OwnershipLost when another process holds any
   * of the books now (the caller steps down); a database error is thrown as
   * it is (the caller tries again while its lease lasts).
   */
  async renew(): Promise<void> {
    const ownerId = this.ownerId;
    if (ownerId === undefined) throw new OwnershipLost('this process owns no books');
    const renewed = await this.db.query<{ book: string }>(
      // Rows in book order, as an acquisition locks them (no deadlock between the two).
      `UPDATE market_owners SET lease_until = clock_timestamp() + $3 * interval '1 millisecond', url = $4
        WHERE book IN (SELECT book FROM market_owners WHERE book = ANY($1::text[]) AND owner_id = $2
                        ORDER BY book FOR UPDATE)
        RETURNING book`,
      [this.books, ownerId, this.o.leaseMs, this.identity.url ?? null],
    );
    if (renewed.length !== this.books.length) {
      this.forget();
      throw new OwnershipLost('another exchange process took the market over');
    }
  }

  /** Give the books up (SIGTERM): a standby takes them at its next look. */
  async release(): Promise<void> {
    const ownerId = this.ownerId;
    this.forget();
    if (ownerId === undefined) return;
    await this.db.query(
      'UPDATE market_owners SET owner_id = NULL, lease_until = NULL WHERE owner_id = $1',
      [ownerId],
    );
  }

  /** Stop naming the books as ours (after a loss). */
  forget(): void {
    this.ownerId = undefined;
    this.epochs = new Map();
  }

  /** The fence parameter of a batch writing `books` (JSON for gpux_fence). */
  tokenFor(books: readonly string[]): string {
    // A book this process does not hold is named with epoch -1, which no
    // row has: the batch is refused rather than written unfenced.
    return JSON.stringify(books.map((book) => ({ book, epoch: this.epochs.get(book) ?? -1 })));
  }
}
