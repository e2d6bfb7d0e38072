// Heartbeats are state, not commands (issue 18). The recorder keeps the
// latest report of each node of each cluster and writes them in batches:
// ONE statement per batch, its rows locked in node id order, and one batch
// at a time in the lane of node writes (agent-runtime.ts). A burst of
// heartbeats therefore costs one write, and heartbeats can never deadlock
// each other, nor the sweep or an Attach, which write nodes in the same
// lane (before this, 2,000 parallel heartbeats of one provider deadlocked
// in their UPDATEs, 40P01).
//
// A Heartbeat call is answered once the batch holding its report has
// committed, and the status changes it reported (online <-> offline) have
// gone through the cluster's book (node-status.ts): the answer carries the
// nodes' status, so it must be the status the exchange now holds. Calls of
// the same batch share its commit; calls arriving while a batch is written
// wait for the next one, which starts as soon as that one is done.

import { createHash } from 'node:crypto';

import { GpuxError } from '@gpux/shared';

import type { Queryable } from '../db/database.js';
import type { Logger } from '../logger.js';
import { setStatus } from './node-status.js';
import type { NodeStatus, NodeView } from './node-status.js';
import type { ClusterRow, ProviderContext } from './provider-context.js';
import type { SerialLane } from './serial-lane.js';

/** A node's report, as the heartbeat checked it. */
export interface NodeFacts {
  readonly id: string;
  readonly gpus: readonly unknown[];
  /** Null when healthy. */
  readonly problem: string | null;
  readonly status: 'online' | 'offline';
}

type Cluster = Pick<ClusterRow, 'id' | 'gpu_type' | 'zone'>;

interface Pending {
  ctx: ProviderContext;
  readonly cluster: Cluster;
  /** Node id → its latest report, with when it arrived. */
  readonly nodes: Map<string, NodeFacts & { readonly at: number }>;
  readonly waiters: { resolve(v: NodeView[]): void; reject(e: unknown): void }[];
}

/** A GPU list the same as last written is written again after this long. */
const REWRITE_MS = 60_000;

/**
 * A batch takes clusters until it holds this many node rows (the largest
 * cluster, 1,000 nodes, always fits): a statement of a few MB at most.
 */
const MAX_BATCH_NODES = 2_000;

/**
 * The batch: the reported nodes' facts written with their rows locked in id
 * order (a GPU list of null: the same as last written, not parsed again),
 * and every node of the batch's clusters read with its live lease, in the
 * same snapshot (statuses as they were; the book then changes them). The
 * live leases come from the clusters' live leases, each one's nodes by
 * lease_nodes' key (OFFSET 0 keeps the planner from scanning all of
 * lease_nodes, which holds every lease there ever was).
 */
const WRITE_HEARTBEATS = `
WITH x AS MATERIALIZED (
  SELECT * FROM json_to_recordset($1::json)
    AS x(id text, at double precision, gpus jsonb, problem text)
), locked AS MATERIALIZED (
  SELECT n.id FROM nodes n WHERE n.id IN (SELECT id FROM x) ORDER BY n.id FOR UPDATE
), written AS (
  UPDATE nodes n SET last_heartbeat_at = to_timestamp(x.at / 1000),
         gpus = COALESCE(x.gpus, n.gpus), problem = x.problem
    FROM x JOIN locked ON locked.id = x.id
   WHERE n.id = x.id
), live AS (
  SELECT ln.node_id, l.id FROM leases l
   CROSS JOIN LATERAL (SELECT node_id FROM lease_nodes WHERE lease_id = l.id OFFSET 0) ln
   WHERE l.cluster_id = ANY($2::text[]) AND l.status IN ('provisioning', 'active')
)
SELECT n.id, n.cluster_id, n.hostname, n.status, live.id AS lease_id
  FROM nodes n LEFT JOIN live ON live.node_id = n.id
 WHERE n.cluster_id = ANY($2::text[])
 ORDER BY n.cluster_id, n.hostname`;

interface NodeRow {
  readonly id: string;
  readonly cluster_id: string;
  readonly hostname: string;
  readonly status: NodeStatus;
  readonly lease_id: string | null;
}

export class HeartbeatRecorder {
  private pending = new Map<string, Pending>();
  private draining = false;
  /**
   * Node id → a digest of the GPU list last written, and when: most
   * heartbeats repeat it, and parsing it again is most of a batch's cost in
   * PostgreSQL. Written in full again after REWRITE_MS all the same, should
   * another process have written the row meanwhile (a takeover).
   */
  private readonly written = new Map<string, { digest: string; at: number }>();

  constructor(
    private readonly db: Queryable,
    private readonly lane: SerialLane,
    private readonly logger: Logger,
  ) {}

  /**
   * Record a heartbeat of `cluster` (its nodes' reports, checked) that
   * arrived at `at`; resolves with every node of the cluster once written.
   */
  record(
    ctx: ProviderContext,
    cluster: Cluster,
    at: number,
    facts: readonly NodeFacts[],
  ): Promise<NodeView[]> {
    let p = this.pending.get(cluster.id);
    if (p === undefined) {
      p = { ctx, cluster, nodes: new Map(), waiters: [] };
      this.pending.set(cluster.id, p);
    }
    p.ctx = ctx;
    for (const f of facts) p.nodes.set(f.id, { ...f, at });
    const entry = p;
    const answered = new Promise<NodeView[]>((resolve, reject) => {
      entry.waiters.push({ resolve, reject });
    });
    if (!this.draining) {
      this.draining = true;
      // On the next turn, so that every heartbeat read in this one joins the batch.
      setImmediate(() => void this.drain());
    }
    return answered;
  }

  private async drain(): Promise<void> {
    while (this.pending.size > 0) {
      const batch = this.take();
      await this.lane
        .run(() => this.write(batch))
        .catch((err: unknown) => {
          // A bug, not the database (write() answers those): no caller may hang on it.
          for (const p of batch) for (const w of p.waiters) w.reject(err);
        });
    }
    this.draining = false;
  }

  /** The oldest pending clusters, up to MAX_BATCH_NODES rows. */
  private take(): Pending[] {
    const batch: Pending[] = [];
    let rows = 0;
    for (const [id, p] of this.pending) {
      if (batch.length > 0 && rows + p.nodes.size > MAX_BATCH_NODES) break;
      batch.push(p);
      rows += p.nodes.size;
      this.pending.delete(id);
    }
    return batch;
  }

  private async write(batch: readonly Pending[]): Promise<void> {
    const digests = new Map<string, { digest: string; at: number }>();
    const rows = batch
      .flatMap((p) =>
        [...p.nodes.values()].map((n) => {
          const gpus = JSON.stringify(n.gpus);
          const digest = createHash('sha1').update(gpus).digest('base64');
          const last = this.written.get(n.id);
          if (last?.digest === digest && n.at - last.at < REWRITE_MS) return { n, gpus: 'null' };
          digests.set(n.id, { digest, at: n.at });
          return { n, gpus };
        }),
      )
      .sort((a, b) => (a.n.id < b.n.id ? -1 : a.n.id > b.n.id ? 1 : 0));
    // The rows' JSON by hand: each GPU list is text already.
    const json = `[${rows
      .map(
        ({ n, gpus }) =>
          `{"id":${JSON.stringify(n.id)},"at":${n.at},"gpus":${gpus},"problem":${JSON.stringify(n.problem)}}`,
      )
      .join(',')}]`;
    let nodes: NodeRow[];
    try {
      nodes = await this.db.query<NodeRow>(
        WRITE_HEARTBEATS,
        [json, batch.map((p) => p.cluster.id)],
        { name: 'gpux_write_heartbeats' },
      );
    } catch (err) {
      this.logger.error(
        { err, clusters: batch.length, nodes: rows.length },
        'writing heartbeats failed',
      );
      const failed = new GpuxError(
        'unavailable',
        'the heartbeat could not be recorded; send it again',
      );
      for (const p of batch) for (const w of p.waiters) w.reject(failed);
      return;
    }
    for (const [id, digest] of digests) this.written.set(id, digest);
    const byCluster = new Map<string, NodeRow[]>();
    for (const n of nodes) {
      const list = byCluster.get(n.cluster_id);
      if (list === undefined) byCluster.set(n.cluster_id, [n]);
      else list.push(n);
    }
    await Promise.all(batch.map((p) => this.settle(p, byCluster.get(p.cluster.id) ?? [])));
  }

  /** The cluster's status changes through its book, then its callers' answer. */
  private async settle(p: Pending, nodes: readonly NodeRow[]): Promise<void> {
    try {
      const changes = new Map<string, NodeStatus>();
      for (const n of nodes) {
        const reported = p.nodes.get(n.id)?.status;
        if (reported !== undefined && reported !== n.status) changes.set(n.id, reported);
      }
      if (changes.size > 0) await setStatus(p.ctx, p.cluster, changes);
      const views = nodes.map((n) => ({
        nodeId: n.id,
        hostname: n.hostname,
        status: changes.get(n.id) ?? n.status,
        leaseId: n.lease_id ?? undefined,
      }));
      for (const w of p.waiters) w.resolve(views);
    } catch (err) {
      for (const w of p.waiters) w.reject(err);
    }
  }
}
