// The single writer of one book (docs/architecture.md, "Invariants").
// Commands queue here; the writer runs every queued command against the
// in-memory state, then commits what the whole batch changed in one
// PostgreSQL transaction (one statement, change-set.ts), and only then
// answers the callers. While one batch commits the next one queues, so under
// load several orders share a commit (group commit) and a book's latency
// stays near one round of transactions.
//
// Books never wait on each other: the market's CommitGroup writes the
// batches of the books ready in the same turn in one statement
// (commit-group.ts).
//
// If a commit fails, none of its batches was acknowledged, and the in-memory
// books are ahead of the database: each writer in the group rebuilds its
// state from PostgreSQL before running anything else.
//
// Each book's live feed (feed/book-feed.ts) numbers what a batch changed in
// the visible book as the batch runs, and publishes it once the batch is
// committed, before the callers are answered; after a rebuild it sends its
// watchers a fresh snapshot.

import { GpuxError } from '@gpux/shared';
import type { GpuType, Zone } from '@gpux/shared';

import type { Database } from '../db/database.js';
import { BookFeed, DEFAULT_FEED_OPTIONS } from '../feed/book-feed.js';
import type { FeedOptions, Prepared } from '../feed/book-feed.js';
import { loadSequence } from '../feed/sequence.js';
import type { Logger } from '../logger.js';
import { loadBook, loadClusters } from './book-loader.js';
import type { BookState, BookStateOptions } from './book-state.js';
import { ChangeSet } from './change-set.js';
import type { BatchSource, CommitGroup, Failure, RanBatch } from './commit-group.js';

/** A command: runs synchronously on the book's state, records its changes. */
export type Command<T> = (state: BookState, changes: ChangeSet) => T;

/**
 * Runs right after a command, in the same batch: what it adds to `changes`
 * is committed with the command's effect or not at all (the answer of an
 * idempotent request, auth/idempotency.ts).
 */
export type AfterCommand<T> = (outcome: T, changes: ChangeSet) => void;

interface Queued {
  readonly run: Command<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
}

/** At most this many commands of one book share one transaction. */
const MAX_BATCH = 256;

/** A rebuild that fails is tried again after 50 ms, doubling up to this. */
const MAX_REBUILD_BACKOFF_MS = 5_000;

/** What a writer needs beyond its book's rules. */
export interface WriterOptions extends BookStateOptions {
  readonly logger: Logger;
  /** The live feed's bounds (feed/book-feed.ts); default DEFAULT_FEED_OPTIONS. */
  readonly feed?: FeedOptions | undefined;
  /** The time the feed puts on its events; default the system's. */
  readonly clock?: { now(): number };
}

export class BookWriter implements BatchSource {
  private queue: Queued[] = [];
  /** Waiting in the group's ready list, or a batch in flight. */
  private busy = false;
  private closed = false;
  /** While busy: resolves when the writer is next idle (for close()). */
  private idle: { promise: Promise<void>; resolve: () => void } | undefined;

  private constructor(
    private readonly db: Database,
    private readonly group: CommitGroup,
    private state: BookState,
    private readonly options: WriterOptions,
    /** The book's live feed (GET /v1/stream). */
    readonly feed: BookFeed,
  ) {}

  /** Rebuilds since start (a batch lost, or its commit failed), and failed rebuild attempts. */
  readonly stats = { rebuilds: 0, rebuildFailures: 0 };

  static async open(
    db: Database,
    group: CommitGroup,
    gpuType: GpuType,
    zone: Zone,
    options: WriterOptions,
  ): Promise<BookWriter> {
    const [state, sequence] = await Promise.all([
      loadBook(db, gpuType, zone, options),
      loadSequence(db, gpuType, zone),
    ]);
    const clock = options.clock ?? { now: () => Date.now() };
    const feedOptions = options.feed ?? DEFAULT_FEED_OPTIONS;
    const feed = new BookFeed(gpuType, zone, state.book, sequence, feedOptions, () => clock.now());
    return new BookWriter(db, group, state, options, feed);
  }

  get gpuType(): GpuType {
    return this.state.gpuType;
  }

  get zone(): Zone {
    return this.state.zone;
  }

  /**
   * Read-only access for views (order book, estimate). It may include the
   * effects of a batch that is being committed right now.
   */
  get view(): BookState {
    return this.state;
  }

  /** Run `command` in the next batch; resolves once its batch is committed. */
  submit<T>(command: Command<T>): Promise<T> {
    if (this.closed)
      return Promise.reject(new GpuxError('unavailable', 'the exchange is shutting down'));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run: command, resolve: resolve as (v: unknown) => void, reject });
      if (!this.busy) {
        this.busy = true;
        this.group.wake(this);
      }
    });
  }

  /** Make sure a cluster of this book is in memory (clusters are loaded on first use). */
  async ensureCluster(clusterId: string): Promise<void> {
    if (this.state.clusters.has(clusterId)) return;
    const loaded = await loadClusters(this.db, this.state.gpuType, this.state.zone, clusterId);
    // Another caller may have loaded it meanwhile; keep the first (it may be in use).
    for (const c of loaded) if (!this.state.clusters.has(c.id)) this.state.clusters.set(c.id, c);
  }

  /** Finish what is queued and refuse new commands. */
  async close(): Promise<void> {
    this.closed = true;
    if (!this.busy) return;
    if (this.idle === undefined) {
      let resolve: () => void = () => undefined;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.idle = { promise, resolve };
    }
    await this.idle.promise;
  }

  /** Runs the next batch on the state (the CommitGroup commits it). */
  runBatch(): RanBatch {
    const batch = this.queue.splice(0, MAX_BATCH);
    const changes = new ChangeSet();
    const results: { ok: boolean; value: unknown }[] = [];
    // Boxed, so that even `throw undefined` counts as broken.
    let broken: Failure | undefined;
    for (const q of batch) {
      if (broken !== undefined) {
        results.push({ ok: false, value: broken.error });
        continue;
      }
      try {
        results.push({ ok: true, value: q.run(this.state, changes) });
      } catch (err) {
        // Commands return their refusals (refusal.ts): a throw is a bug, and
        // the state may be half-changed, so the whole batch is lost.
        broken = { error: err };
        results.push({ ok: false, value: err });
      }
    }
    // What the batch changed in the visible book, numbered; its last number
    // is committed with it (migration 0019).
    let prepared: Prepared | undefined;
    if (broken === undefined) {
      prepared = this.feed.prepare(this.state.book, changes.fills);
      if (prepared !== undefined) {
        changes.sequences.push({
          gpu_type: this.gpuType,
          zone: this.zone,
          sequence: prepared.last,
        });
      }
    }
    return {
      book: `${this.gpuType}/${this.zone}`,
      commands: batch.length,
      changes: broken === undefined ? changes : undefined,
      settle: async (commitFailure: Failure | undefined): Promise<void> => {
        // A batch that changed nothing is not hurt by another book's failed commit.
        const failure = broken ?? (changes.empty ? undefined : commitFailure);
        if (failure?.fenced === true) {
          // Another process owns the book now: this state is no longer the
          // market's, and nothing may run on it again (market/ownership.ts).
          this.closed = true;
          this.feed.close('unavailable');
          for (const q of [...batch, ...this.queue.splice(0)]) q.reject(failure.error);
          this.busy = false;
          this.idle?.resolve();
          this.idle = undefined;
          return;
        }
        if (failure !== undefined) {
          // Rebuild first, so nobody who hears of the failure can still read the lost state.
          this.options.logger.error(
            { err: failure.error, book: `${this.gpuType}/${this.zone}`, commands: batch.length },
            broken === undefined
              ? 'write batch failed to commit; rebuilding the book from the database'
              : 'a command broke its batch (a bug); rebuilding the book from the database',
          );
          await this.rebuild();
          for (const q of batch) q.reject(failure.error);
        } else {
          // Committed: the watchers hear of it before the callers do.
          if (prepared !== undefined) this.feed.publish(prepared);
          batch.forEach((q, i) => {
            const r = results[i];
            if (r === undefined) return;
            if (r.ok) q.resolve(r.value);
            else q.reject(r.value);
          });
        }
        if (this.queue.length > 0) this.group.wake(this);
        else {
          this.busy = false;
          this.idle?.resolve();
          this.idle = undefined;
        }
      },
    };
  }

  private async rebuild(): Promise<void> {
    // Until the database answers again, keep trying: nothing may run on a
    // state that does not match what was committed. Each failure is logged
    // and counted, and the next try waits longer.
    this.stats.rebuilds++;
    for (let attempt = 0; ; attempt++) {
      try {
        const tally = this.state.tally;
        const [state, sequence] = await Promise.all([
          loadBook(this.db, this.gpuType, this.zone, this.options),
          loadSequence(this.db, this.gpuType, this.zone),
        ]);
        state.tally = tally;
        this.state = state;
        // Its watchers start again from what the database holds.
        this.feed.reset(state.book, sequence);
        // What was in memory and not committed is gone: leases too.
        this.group.onLeases?.('all');
        if (attempt > 0) {
          this.options.logger.info(
            { book: `${this.gpuType}/${this.zone}`, attempts: attempt + 1 },
            'book rebuilt from the database',
          );
        }
        return;
      } catch (err) {
        this.stats.rebuildFailures++;
        const waitMs = Math.min(MAX_REBUILD_BACKOFF_MS, 50 * 2 ** attempt);
        this.options.logger.error(
          { err, book: `${this.gpuType}/${this.zone}`, attempt: attempt + 1, retryInMs: waitMs },
          'rebuilding the book failed; it takes no commands until it succeeds',
        );
        await new Promise((r) => setTimeout(r, waitMs));
      }
    }
  }
}
