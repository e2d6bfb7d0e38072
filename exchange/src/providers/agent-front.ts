// The heartbeats where the gRPC service runs (issue 18, D29): a heartbeat is
// recorded in memory (node-liveness.ts) and answered with the nodes as their
// books hold them; only what changes a node's status reaches the market.
// The answer is kept per cluster and given again while the heartbeats
// report what it shows and the market says nothing of the cluster's leases
// (`invalidate`, after a commit that changed them): most heartbeats cost the
// market nothing. The others of one turn of the event loop go to the market
// as one message (agent-backend.ts: reportNodes).
//
// Every second the silent nodes go offline through their books (D29); every
// two seconds the facts that changed, and the time of each node's last
// heartbeat at least every 30 s, are written in one statement, rows in id
// order and none waited for (a row locked by the market's write batch is
// written the next time), so these writes never deadlock anything.
//
// All of it only while this process owns the market (docs/ownership.md):
// when it begins to serve (a start, a takeover) the state is made anew from
// the database, every attached cluster's silence counted from then.

import type { Database } from '../db/database.js';
import type { Logger } from '../logger.js';
import type { AgentBackend, ClusterNodes } from './agent-backend.js';
import type { KnownCluster } from './agent-clusters.js';
import { runtimeOf } from './agent-runtime.js';
import { NodeLiveness } from './node-liveness.js';
import type { NodeFacts } from './node-liveness.js';
import type { NodeView } from './node-status.js';
import type { ClusterRow } from './provider-context.js';
import { invalid } from './provider-context.js';

export interface FrontOptions {
  /** The agents' own connections (agent-database.ts). */
  readonly db: Database;
  readonly backend: AgentBackend;
  readonly logger: Logger;
  /** Milliseconds on the market's clock. */
  readonly clock: () => number;
  /** Does this process own the market now? */
  readonly serving: () => boolean;
  /** Changes whenever this process begins to serve the market again (a takeover). */
  readonly generation: () => number;
  /** How often silence is looked for and facts written; 0: only when asked (tests). */
  readonly sweepEveryMs?: number;
  readonly flushEveryMs?: number;
}

/** A node as a heartbeat reports it, checked against its cluster. */
export interface ReportedNode extends NodeFacts {
  readonly healthy: boolean;
}

const WRITE_NODES = `
WITH x AS MATERIALIZED (
  SELECT * FROM json_to_recordset($1::json)
    AS x(id text, heard double precision, gpus jsonb, problem text)
), locked AS MATERIALIZED (
  SELECT n.id FROM nodes n WHERE n.id IN (SELECT id FROM x) ORDER BY n.id FOR UPDATE SKIP LOCKED
)
UPDATE nodes n
   SET last_heartbeat_at = GREATEST(n.last_heartbeat_at, to_timestamp(x.heard / 1000)),
       gpus = COALESCE(x.gpus, n.gpus), problem = x.problem
  FROM x JOIN locked ON locked.id = x.id
 WHERE n.id = x.id
RETURNING n.id`;

/** At most this many rows a statement (the service answers calls between two). */
const MAX_WRITE_ROWS = 1_000;

interface Pending {
  report: ClusterNodes;
  readonly waiters: { resolve(v: NodeView[]): void; reject(e: unknown): void }[];
}

/** Does the kept answer show each reported node with the status its report asks for? */
function sameStatus(kept: readonly NodeView[], reports: readonly ReportedNode[]): boolean {
  for (const r of reports) {
    const v = kept.find((k) => k.nodeId === r.id);
    if (v?.status !== (r.healthy ? 'online' : 'offline')) return false;
  }
  return true;
}

export class AgentFront {
  private readonly liveness = new NodeLiveness();
  /** The generation the liveness was made for; undefined: not made. */
  private made: number | undefined;
  private making: Promise<void> | undefined;
  private pending = new Map<string, Pending>();
  /** Per cluster, the nodes as the market last answered (kept until it says the leases changed). */
  private readonly views = new Map<string, NodeView[]>();
  /** Raised by every invalidation: an answer asked for before it is not kept. */
  private invalidations = 0;
  private scheduled = false;
  private readonly timers: NodeJS.Timeout[] = [];
  private flushing: Promise<void> | undefined;
  private closed = false;
  /** A sweep found the process not serving: silence counts again once it serves. */
  private paused = false;
  /** When (monotonic) the last sweep ran: one much later than due means a stall. */
  private lastSweepMono = performance.now();
  private readonly sweepMs: number;
  private readonly flushMs: number;

  constructor(private readonly o: FrontOptions) {
    const sweepMs = o.sweepEveryMs ?? 1_000;
    this.sweepMs = sweepMs;
    this.flushMs = o.flushEveryMs ?? 2_000;
    const flushMs = this.flushMs;
    if (sweepMs > 0) {
      this.timers.push(
        setInterval(() => {
          this.sweep().catch((err: unknown) => {
            o.logger.error({ err }, 'looking for silent agents failed; trying again');
          });
        }, sweepMs),
      );
    }
    if (flushMs > 0) {
      this.timers.push(
        setInterval(() => {
          this.flush().catch((err: unknown) => {
            o.logger.warn({ err }, "writing the nodes' heartbeats failed; trying again");
          });
        }, flushMs),
      );
    }
    for (const t of this.timers) t.unref();
  }

  /** The state of this generation of ownership, made from the database if new. */
  private async ready(): Promise<void> {
    const generation = this.o.generation();
    if (this.made === generation) return;
    this.making ??= (async () => {
      this.liveness.reset();
      this.invalidate('all');
      runtimeOf(this.o).clusters.clear();
      const rows = await this.o.db.query<{
        id: string;
        cluster_id: string;
        status: NodeView['status'];
        heartbeat_ms: number;
      }>(
        `SELECT n.id, n.cluster_id, n.status, c.heartbeat_ms
           FROM nodes n JOIN clusters c ON c.id = n.cluster_id
          WHERE c.heartbeat_ms IS NOT NULL`,
      );
      const now = this.o.clock();
      const byCluster = new Map<string, { ms: number; nodes: typeof rows }>();
      for (const r of rows) {
        const c = byCluster.get(r.cluster_id) ?? { ms: r.heartbeat_ms, nodes: [] };
        c.nodes.push(r);
        byCluster.set(r.cluster_id, c);
      }
      for (const [id, c] of byCluster) this.liveness.watch(id, c.ms, c.nodes, now);
      this.made = generation;
    })().finally(() => {
      this.making = undefined;
    });
    await this.making;
  }

  /** Attach answered OK: the cluster's nodes are watched from now (D29). */
  async attached(cluster: KnownCluster, heartbeatMs: number): Promise<void> {
    runtimeOf(this.o).clusters.attached(cluster.row.id, heartbeatMs);
    await this.ready();
    this.liveness.watch(
      cluster.row.id,
      heartbeatMs,
      [...cluster.nodes.values()].map((n) => ({ id: n.id })),
      this.o.clock(),
    );
  }

  /** The market changed these clusters' leases ('all': any cluster's): their answers are asked for again. */
  invalidate(clusters: readonly string[] | 'all'): void {
    this.invalidations++;
    if (clusters === 'all') this.views.clear();
    else for (const id of clusters) this.views.delete(id);
  }

  /**
   * A heartbeat of the caller's cluster, its nodes checked against it:
   * recorded, and answered with every node as its book holds it.
   */
  async heartbeat(cluster: KnownCluster, reports: readonly ReportedNode[]): Promise<NodeView[]> {
    const row = cluster.row;
    if (row.heartbeat_ms === null) throw invalid(`attach to cluster ${row.id} first`);
    await this.ready();
    this.liveness.heard(row.id, row.heartbeat_ms, reports, this.o.clock());
    const kept = this.views.get(row.id);
    if (kept !== undefined && sameStatus(kept, reports)) return kept;
    // A change goes to the market: until its answer, the cluster's
    // heartbeats follow it there (the newest report wins, agent-backend.ts).
    this.views.delete(row.id);
    const asked = this.invalidations;
    const views = await this.report({
      clusterId: row.id,
      gpuType: row.gpu_type,
      zone: row.zone,
      reported: reports.map((r) => [r.id, r.healthy ? 'online' : 'offline'] as const),
    });
    this.liveness.saw(views);
    this.keep(row.id, views, asked);
    return views;
  }

  /** Keep the market's answer, unless the leases changed since it was asked for. */
  private keep(clusterId: string, views: NodeView[], asked: number): void {
    if (this.invalidations === asked) this.views.set(clusterId, views);
  }

  /** The reports of this turn go to the market together. */
  private report(report: ClusterNodes): Promise<NodeView[]> {
    let p = this.pending.get(report.clusterId);
    if (p === undefined) {
      p = { report, waiters: [] };
      this.pending.set(report.clusterId, p);
    } else {
      // A later heartbeat of the same cluster in the same turn: its report counts.
      const merged = new Map(p.report.reported);
      for (const [id, s] of report.reported) merged.set(id, s);
      p.report = { ...report, reported: [...merged] };
    }
    const entry = p;
    const answered = new Promise<NodeView[]>((resolve, reject) =>
      entry.waiters.push({ resolve, reject }),
    );
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => void this.send());
    }
    return answered;
  }

  private async send(): Promise<void> {
    this.scheduled = false;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    try {
      const views = await this.o.backend.reportNodes(batch.map((p) => p.report));
      batch.forEach((p, i) => {
        for (const w of p.waiters) w.resolve(views[i] ?? []);
      });
    } catch (err) {
      for (const p of batch) for (const w of p.waiters) w.reject(err);
    }
  }

  /** D29: silent nodes go offline through their books. Returns how many. */
  async sweep(): Promise<number> {
    const mono = performance.now();
    const stalled = this.sweepMs > 0 && mono - this.lastSweepMono > 3 * this.sweepMs;
    this.lastSweepMono = mono;
    if (this.closed) return 0;
    if (!this.o.serving()) {
      this.paused = true;
      return 0;
    }
    await this.ready();
    // Heartbeats were refused (not serving) or not read (a stall) meanwhile:
    // no agent is silent for that.
    if (this.paused || stalled) {
      this.paused = false;
      this.liveness.resumed(this.o.clock());
      return 0;
    }
    const silent = this.liveness.silent(this.o.clock());
    if (silent.length === 0) return 0;
    const clusters = await Promise.all(
      silent.map((s) => runtimeOf(this.o).clusters.get(s.clusterId)),
    );
    const reports: ClusterNodes[] = [];
    silent.forEach((s, i) => {
      const row: ClusterRow | undefined = clusters[i]?.row;
      if (row === undefined) return;
      this.o.logger.warn(
        { cluster: s.clusterId, nodes: s.nodeIds.length },
        'agent silent: nodes offline',
      );
      reports.push({
        clusterId: row.id,
        gpuType: row.gpu_type,
        zone: row.zone,
        reported: s.nodeIds.map((id) => [id, 'offline'] as const),
      });
    });
    const asked = this.invalidations;
    const views = await this.o.backend.reportNodes(reports);
    views.forEach((v, i) => {
      this.liveness.saw(v);
      const id = reports[i]?.clusterId;
      if (id !== undefined) this.keep(id, v, asked);
    });
    return reports.reduce((n, r) => n + r.reported.length, 0);
  }

  /** Write what changed since the last time (one statement per 5,000 rows). */
  flush(): Promise<void> {
    this.flushing ??= this.write().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private async write(): Promise<void> {
    if (!this.o.serving() || this.made !== this.o.generation()) return;
    // Twice the touches a flush must write to keep up, so nodes heard first
    // together (a start) spread out over a few flushes instead of all
    // falling due in one every touch interval.
    const perFlush = Math.ceil(
      (2 * this.liveness.size * this.flushMs) / this.liveness.touchIntervalMs,
    );
    const rows = this.liveness.dirty(this.o.clock(), Math.max(500, perFlush));
    for (let i = 0; i < rows.length; i += MAX_WRITE_ROWS) {
      const part = rows.slice(i, i + MAX_WRITE_ROWS);
      const json = `[${part
        .map(
          (r) =>
            `{"id":${JSON.stringify(r.id)},"heard":${r.heardMs},"gpus":${r.gpus ?? 'null'},"problem":${JSON.stringify(r.problem)}}`,
        )
        .join(',')}]`;
      try {
        const done = await this.o.db.query<{ id: string }>(WRITE_NODES, [json], {
          name: 'gpux_write_node_heartbeats',
        });
        if (done.length < part.length) {
          const written = new Set(done.map((d) => d.id));
          this.liveness.unwritten(part.filter((r) => !written.has(r.id)));
        }
      } catch (err) {
        this.liveness.unwritten(rows.slice(i));
        throw err;
      }
    }
  }

  /** Stop the timers; what is still unwritten is written. */
  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    await this.flush().catch((err: unknown) => {
      this.o.logger.warn({ err }, "writing the nodes' last heartbeats at close failed");
    });
  }
}
