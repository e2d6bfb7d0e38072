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

/**
 * A batch takes clusters until it holds this many node rows (the largest
 * cluster, 1,000 nodes, always fits): a statement of a few MB at most.
 */
const MAX_BATCH_NODES = 2_000;

/**
 * The batch: the reported nodes' facts written with their rows locked in id
 * order, and every node of the batch's clusters read with its live lease (in
 * the same snapshot: statuses as they were, which the book then changes).
 */
const WRITE_HEARTBEATS = `
WITH x AS MATERIALIZED (
  SELECT * FROM json_to_recordset($1::json)
    AS x(id text, at double precision, gpus jsonb, problem text)
), locked AS MATERIALIZED (
  SELECT n.id FROM nodes n WHERE n.id IN (SELECT id FROM x) ORDER BY n.id FOR UPDATE
), written AS (
  UPDATE nodes n SET last_heartbeat_at = to_timestamp(x.at / 1000), gpus = x.gpus,
         problem = x.problem
    FROM x JOIN locked ON locked.id = x.id
   WHERE n.id = x.id
)
SELECT n.id, n.cluster_id, n.hostname, n.status, l.id AS lease_id
  FROM nodes n
  LEFT JOIN lease_nodes ln ON ln.node_id = n.id
   AND ln.lease_id IN (SELECT id FROM leases
                        WHERE cluster_id = ANY($2::text[]) AND status IN ('provisioning', 'active'))
  LEFT JOIN leases l ON l.id = ln.lease_id
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
    const rows = batch
      .flatMap((p) =>
        [...p.nodes.values()].map((n) => ({
          id: n.id,
          at: n.at,
          gpus: n.gpus,
          problem: n.problem,
        })),
      )
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    let nodes: NodeRow[];
    try {
      nodes = await this.db.query<NodeRow>(
        WRITE_HEARTBEATS,
        [JSON.stringify(rows), batch.map((p) => p.cluster.id)],
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
