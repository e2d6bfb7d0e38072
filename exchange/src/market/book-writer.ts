// The single writer of one book (architecture.md: "one writer per book").
// Commands queue here; the writer runs every queued command against the
// in-memory state, then commits what the whole batch changed in one
// PostgreSQL transaction (one statement, change-set.ts), and only then
// answers the callers. While one batch commits the next one queues, so under
// load several orders share a commit (group commit) and a book's latency
// stays near one round of transactions.
//
// Books never wait on each other. A book with commands and no batch in
// flight is "ready"; the market's CommitGroup takes every book that is ready
// in the same turn of the event loop and writes their batches in ONE
// statement (each book's batch still runs on its own book only). A book that
// becomes ready while another book's commit is in flight does not wait for
// it: it goes in the next group, on another connection, at once. Under load
// the books fall into step and share commits, which divides PostgreSQL's
// fixed cost per transaction (round trip, commit, the ledger's statement
// trigger) among them (docs/persistence.md).
//
// If a commit fails, none of its batches was acknowledged, and the in-memory
// books are ahead of the database: each writer in the group rebuilds its
// state from PostgreSQL before running anything else.

import { GpuxError } from '@gpux/shared';
import type { GpuType, Zone } from '@gpux/shared';

import type { Database, Queryable } from '../db/database.js';
import { OrderBook } from '../matching/index.js';
import type { LastTrade } from '../matching/index.js';
import { BookState } from './book-state.js';
import type { BookStateOptions, ClusterState, LiveLease, NodeState } from './book-state.js';
import { ChangeSet } from './change-set.js';
import { openOrderOf } from './rows.js';
import type { LeaseNodeRow, LeaseRow, OrderRow } from './rows.js';

/** A command: runs synchronously on the book's state, records its changes. */
export type Command<T> = (state: BookState, changes: ChangeSet) => T;

interface Queued {
  readonly run: Command<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
}

/** At most this many commands of one book share one transaction. */
const MAX_BATCH = 256;

/** A book's batch, run on its state and waiting for its commit. */
interface RanBatch {
  /** What to write; undefined when a command failed and the batch is lost. */
  readonly changes: ChangeSet | undefined;
  /** Answers the batch's callers; `commitFailure`: its commit failed. */
  settle(commitFailure: Failure | undefined): Promise<void>;
}

/** Why something failed, boxed so that a thrown `undefined` is a failure too. */
interface Failure {
  readonly error: unknown;
}

/**
 * Writes the batches of the books that are ready in the same turn of the
 * event loop as one statement (see the top of this file).
 */
export class CommitGroup {
  private ready: BookWriter[] = [];
  private scheduled = false;

  constructor(private readonly db: Database) {}

  /** `writer` has commands and no batch in flight. */
  wake(writer: BookWriter): void {
    this.ready.push(writer);
    if (this.scheduled) return;
    this.scheduled = true;
    // On the next turn of the event loop, so the commands of every request
    // read in this one (and every book woken meanwhile) share the batch.
    setImmediate(() => {
      this.scheduled = false;
      const writers = this.ready;
      this.ready = [];
      void this.commit(writers.map((w) => w.runBatch()));
    });
  }

  private async commit(group: readonly RanBatch[]): Promise<void> {
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
    if (!merged.empty) {
      try {
        await merged.write(this.db);
      } catch (err) {
        failure = { error: err };
      }
    }
    await Promise.all([...lost, ...written.map((b) => b.settle(failure))]);
  }
}

export class BookWriter {
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
    private readonly options: BookStateOptions,
  ) {}

  static async open(
    db: Database,
    group: CommitGroup,
    gpuType: GpuType,
    zone: Zone,
    options: BookStateOptions,
  ): Promise<BookWriter> {
    return new BookWriter(db, group, await loadBook(db, gpuType, zone, options), options);
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
      return Promise.reject(new GpuxError('internal_error', 'the exchange is shutting down'));
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
    let broken: { readonly error: unknown } | undefined;
    for (const q of batch) {
      if (broken !== undefined) {
        results.push({ ok: false, value: broken.error });
        continue;
      }
      try {
        results.push({ ok: true, value: q.run(this.state, changes) });
      } catch (err) {
        // A GpuxError is a clean refusal made before anything changed. Anything
        // else means the state may be half-changed: the batch is lost.
        if (err instanceof GpuxError) results.push({ ok: false, value: err });
        else {
          broken = { error: err };
          results.push({ ok: false, value: err });
        }
      }
    }
    return {
      changes: broken === undefined ? changes : undefined,
      settle: async (commitFailure: Failure | undefined): Promise<void> => {
        // A batch that changed nothing is not hurt by another book's failed commit.
        const failure = broken ?? (changes.empty ? undefined : commitFailure);
        if (failure !== undefined) {
          // Rebuild first, so nobody who hears of the failure can still read the lost state.
          await this.rebuild();
          for (const q of batch) q.reject(failure.error);
        } else {
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
    // state that does not match what was committed.
    for (let attempt = 0; ; attempt++) {
      try {
        this.state = await loadBook(this.db, this.state.gpuType, this.state.zone, this.options);
        return;
      } catch {
        await new Promise((r) => setTimeout(r, Math.min(1000, 50 * 2 ** attempt)));
      }
    }
  }
}

/**
 * A book's whole state from PostgreSQL (architecture.md flow 5): the open
 * orders with their priority, the last trade, the clusters with live leases
 * or open sells, and the live leases.
 */
export async function loadBook(
  db: Queryable,
  gpuType: GpuType,
  zone: Zone,
  options: BookStateOptions,
): Promise<BookState> {
  const orders = await db.query<OrderRow>(
    'SELECT * FROM orders WHERE gpu_type = $1 AND zone = $2 AND book_state IS NOT NULL',
    [gpuType, zone],
  );
  const [last] = await db.query<{
    price_cents: number;
    gpus: number;
    at_ms: number;
    book_seq: number;
  }>(
    `SELECT price_cents, gpus, at_ms, book_seq FROM fills WHERE gpu_type = $1 AND zone = $2
      ORDER BY book_seq DESC LIMIT 1`,
    [gpuType, zone],
  );
  const lastTrade: LastTrade | null =
    last === undefined ? null : { price: last.price_cents, gpus: last.gpus, at: last.at_ms };
  const [clock] = await db.query<{ clock: number | null }>(
    `SELECT GREATEST(
        (SELECT MAX(accepted_ms) FROM orders WHERE gpu_type = $1 AND zone = $2),
        (SELECT MAX(at_ms) FROM fills WHERE gpu_type = $1 AND zone = $2)) AS clock`,
    [gpuType, zone],
  );
  const book = OrderBook.restore(orders.map(openOrderOf), lastTrade, clock?.clock ?? 0);
  const state = new BookState(gpuType, zone, book, last?.book_seq ?? 0, options);
  for (const r of orders) state.orders.set(r.id, r);

  for (const c of await loadClusters(db, gpuType, zone)) state.clusters.set(c.id, c);
  const leases = await db.query<LeaseRow>(
    `SELECT * FROM leases WHERE gpu_type = $1 AND zone = $2 AND status IN ('provisioning', 'active')`,
    [gpuType, zone],
  );
  const nodes = await db.query<LeaseNodeRow>(
    `SELECT n.* FROM lease_nodes n JOIN leases l ON l.id = n.lease_id
      WHERE l.gpu_type = $1 AND l.zone = $2 AND l.status IN ('provisioning', 'active')`,
    [gpuType, zone],
  );
  const byLease = new Map<string, LiveLease>();
  for (const l of leases) byLease.set(l.id, { row: l, nodes: [], resaleOrderId: null });
  for (const n of nodes) byLease.get(n.lease_id)?.nodes.push(n);
  for (const live of byLease.values()) {
    state.leases.set(live.row.id, live);
    const cluster = state.clusters.get(live.row.cluster_id);
    for (const n of live.nodes) cluster?.leased.set(n.node_id, live.row.id);
  }
  for (const r of orders) {
    if (r.side !== 'sell' || r.remaining_nodes === null) continue;
    if (r.resale_lease_id !== null) {
      const live = state.leases.get(r.resale_lease_id);
      if (live !== undefined) live.resaleOrderId = r.id;
    } else if (r.cluster_id !== null) {
      const cluster = state.clusters.get(r.cluster_id);
      if (cluster !== undefined) cluster.openSellNodes += r.remaining_nodes;
    }
  }
  return state;
}

/** The clusters of a book (or one of them) with their nodes; capacity counters empty. */
async function loadClusters(
  db: Queryable,
  gpuType: GpuType,
  zone: Zone,
  clusterId?: string,
): Promise<ClusterState[]> {
  const rows = await db.query<{
    cluster_id: string;
    provider_account_id: string;
    node_id: string | null;
    hostname: string | null;
    status: NodeState['status'] | null;
  }>(
    `SELECT c.id AS cluster_id, c.provider_account_id, n.id AS node_id, n.hostname, n.status
       FROM clusters c LEFT JOIN nodes n ON n.cluster_id = c.id
      WHERE c.gpu_type = $1 AND c.zone = $2 AND ($3::text IS NULL OR c.id = $3)
      ORDER BY c.id, n.hostname`,
    [gpuType, zone, clusterId ?? null],
  );
  const out = new Map<string, ClusterState>();
  for (const r of rows) {
    let c = out.get(r.cluster_id);
    if (c === undefined) {
      c = {
        id: r.cluster_id,
        providerAccountId: r.provider_account_id,
        nodes: [],
        leased: new Map(),
        openSellNodes: 0,
        nextFree: 0,
      };
      out.set(r.cluster_id, c);
    }
    if (r.node_id !== null && r.hostname !== null && r.status !== null) {
      c.nodes.push({ id: r.node_id, hostname: r.hostname, status: r.status });
    }
  }
  return [...out.values()];
}
