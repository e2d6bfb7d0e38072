// Books never wait on each other. A book with commands and no batch in
// flight is "ready"; the CommitGroup takes every book that is ready in the
// same turn of the event loop and writes their batches in ONE statement
// (each book's batch still runs on its own book only). A book that becomes
// ready while another book's commit is in flight does not wait for it: it
// goes in the next group, on another connection, at once. Under load the
// books fall into step and share commits, which divides PostgreSQL's fixed
// cost per transaction (round trip, commit, the ledger's statement trigger)
// among them (docs/persistence.md).

import type { Database } from '../db/database.js';
import { SILENT_LOGGER } from '../logger.js';
import type { Logger } from '../logger.js';
import { ChangeSet } from './change-set.js';
import { fencedError, isFencedError } from './ownership.js';
import type { Fence } from './ownership.js';
import type { LeaseRow } from './rows.js';

/** A book's batch, run on its state and waiting for its commit. */
export interface RanBatch {
  /** The book it ran on (`gpu_type/zone`), whose epoch fences its write. */
  readonly book: string;
  /** How many commands ran in it (gpux_commit_commands); unset: not counted. */
  readonly commands?: number;
  /** What to write; undefined when a command failed and the batch is lost. */
  readonly changes: ChangeSet | undefined;
  /** Answers the batch's callers; `commitFailure`: its commit failed. */
  settle(commitFailure: Failure | undefined): Promise<void>;
}

/** Why something failed, boxed so that a thrown `undefined` is a failure too. */
export interface Failure {
  readonly error: unknown;
  /**
   * The fence refused the write: this process no longer owns the books
   * (market/ownership.ts). Nothing was written and nothing will be.
   */
  readonly fenced?: boolean;
}

/** What the group commits: a book writer. */
export interface BatchSource {
  /** Runs the next batch on its state; the group commits it. */
  runBatch(): RanBatch;
}

/**
 * Writes the batches of the books that are ready in the same turn of the
 * event loop as one statement (see the top of this file).
 */
export class CommitGroup {
  private ready: BatchSource[] = [];
  private scheduled = false;

  /** Called after a commit that wrote outbox events (the relay wakes). */
  onEvents: (() => void) | undefined;

  /** Called after a commit that queued accounts' events (the numberer wakes). */
  onAccountEvents: (() => void) | undefined;

  /**
   * Called after a commit that changed leases, with their clusters, and with
   * 'all' when a book was rebuilt: which nodes are leased may have changed
   * (the agents' service keeps its answers to heartbeats until then,
   * providers/agent-front.ts).
   */
  onLeases: ((clusters: readonly string[] | 'all') => void) | undefined;

  /**
   * Called after each commit group that wrote something: its commands, its
   * write's time in seconds, whether it failed, and the leases it wrote
   * (metrics/exchange-metrics.ts counts the ended ones).
   */
  onCommit:
    | ((
        commands: number,
        writeSeconds: number,
        failed: boolean,
        leases: Iterable<LeaseRow>,
      ) => void)
    | undefined;

  constructor(
    private readonly db: Database,
    /** At debug level, one line per commit group with its times (docs/benchmarks.md). */
    private readonly logger: Logger = SILENT_LOGGER,
    /** Every write names its books' epochs (market/ownership.ts); none: unfenced (tests). */
    private readonly fence?: Fence,
  ) {}

  /** `writer` has commands and no batch in flight. */
  wake(writer: BatchSource): void {
    this.ready.push(writer);
    if (this.scheduled) return;
    this.scheduled = true;
    // On the next turn of the event loop, so the commands of every request
    // read in this one (and every book woken meanwhile) share the batch.
    setImmediate(() => {
      this.scheduled = false;
      const writers = this.ready;
      this.ready = [];
      const t0 = performance.now();
      const ran = writers.map((w) => w.runBatch());
      void this.commit(ran, performance.now() - t0);
    });
  }

  private async commit(group: readonly RanBatch[], runMs: number): Promise<void> {
    // A batch that broke is not written: it rebuilds at once, without
    // waiting for the others' commit.
    const lost: Promise<void>[] = [];
    const written: RanBatch[] = [];
    const sets: ChangeSet[] = [];
    for (const b of group) {
      if (b.changes === undefined) lost.push(b.settle(undefined));
      else {
        written.push(b);
        sets.push(b.changes);
      }
    }
    const merged = ChangeSet.merge(sets);
    let failure: Failure | undefined;
    const t0 = performance.now();
    if (!merged.empty) {
      try {
        await merged.write(this.db, this.fence?.tokenFor(written.map((b) => b.book)));
        if (merged.outbox.length > 0) this.onEvents?.();
        if (merged.events.length > 0) this.onAccountEvents?.();
        if (merged.leases.size > 0 && this.onLeases !== undefined) {
          this.onLeases([...new Set([...merged.leases.values()].map((l) => l.cluster_id))]);
        }
        logEndedLeases(this.logger, merged.leases.values());
      } catch (err) {
        if (isFencedError(err)) {
          failure = { error: fencedError(), fenced: true };
          this.fence?.fenced();
        } else failure = { error: err };
      }
    }
    const writeMs = performance.now() - t0;
    await Promise.all([...lost, ...written.map((b) => b.settle(failure))]);
    // What a request's latency is made of, to line up with a client's
    // timings: running the batches, their statement with its commit
    // (PostgreSQL's WAL flush included), answering. Not for a group that
    // wrote nothing (the books' clock ticks).
    if (merged.empty && lost.length === 0) return;
    if (this.onCommit !== undefined) {
      let commands = 0;
      for (const b of group) commands += b.commands ?? 0;
      this.onCommit(
        commands,
        writeMs / 1000,
        failure !== undefined || lost.length > 0,
        merged.leases.values(),
      );
    }
    this.logger.debug(
      {
        books: written.length,
        orders: merged.orders.size,
        fills: merged.fills.length,
        runMs: round2(runMs),
        writeMs: round2(writeMs),
        settleMs: round2(performance.now() - t0 - writeMs),
        failed: failure !== undefined,
      },
      'commit group',
    );
  }
}

function round2(ms: number): number {
  return Math.round(ms * 100) / 100;
}

/**
 * Every lease this commit ended, at info with its ids (an operator follows a
 * failure, a termination or a resale from the log): a lease row is written
 * with an end reason only by the change that ends it.
 */
function logEndedLeases(logger: Logger, leases: Iterable<LeaseRow>): void {
  for (const l of leases) {
    if (l.end_reason === null) continue;
    logger.info(
      {
        lease_id: l.id,
        account_id: l.account_id,
        cluster_id: l.cluster_id,
        reason: l.end_reason,
        refund_cents: l.refund_cents,
      },
      `lease ${l.end_reason}`,
    );
  }
}
