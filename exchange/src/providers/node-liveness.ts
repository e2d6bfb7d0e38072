// Heartbeats are state, not commands (issue 18, D29). What the agents say of
// their nodes is kept here, in memory, where the gRPC service runs: when each
// node was last heard, the facts of its last report (GPUs, problem) and the
// status its book last gave it. A heartbeat then costs no database
// statement of its own:
//
// - silence (D29: 3 of the agent's declared intervals) is found here, by
//   `silent()`, not by reading the nodes back;
// - the facts are written in batches (`dirty()`, written by the caller in
//   one statement every few seconds): a node's row when its inventory (its
//   GPUs by index, uuid, name and memory) or its problem changes, and at
//   least every `touchEveryMs` its `last_heartbeat_at` with the GPUs' last
//   readings (utilization and temperature change at every heartbeat; they
//   are for operators, GET /v1/admin/clusters, and a minute-old reading
//   will do), for operators and for a process that takes the market over;
// - only a status change (online <-> offline) goes to the market, through
//   the cluster's book (node-status.ts).
//
// Silence is counted from the last heartbeat, or from the Attach, or from
// when this process began to serve the market (`reset`): a process that
// takes the market over gives every agent 3 intervals before it calls one
// silent, whatever the database last recorded.

import type { NodeStatus } from './node-status.js';

/** How often, at least, a heard node's last_heartbeat_at is written (the default touchEveryMs). */
export const HEARTBEAT_WRITE_EVERY_MS = 30_000;

/** D29: a node silent for this many of its agent's intervals is offline. */
export const SILENT_INTERVALS = 3;

/** A GPU as a heartbeat reports it (agent.proto's Gpu). */
export interface GpuFacts {
  readonly index: number;
  readonly name: string;
  readonly uuid: string;
  readonly memoryTotalMib: number;
  readonly utilizationPercent: number;
  readonly temperatureC: number;
}

/** A node's report in a heartbeat, checked. */
export interface NodeFacts {
  readonly id: string;
  readonly gpus: readonly GpuFacts[];
  /** Null when healthy. */
  readonly problem: string | null;
}

/** What of a GPU list is inventory (a change is written at once), not a reading. */
function inventoryOf(gpus: readonly GpuFacts[]): string {
  let key = '';
  for (const g of gpus)
    key += `${g.index}\u0000${g.uuid}\u0000${g.name}\u0000${g.memoryTotalMib}\u0001`;
  return key;
}

/** A node of an attached cluster, as this process keeps it. */
interface Node {
  readonly id: string;
  readonly clusterId: string;
  lastHeardMs: number;
  /** The book's status as last seen (heartbeat answers, the sweep). */
  status: NodeStatus | undefined;
  /**
   * The GPUs to write next (as reported, or as JSON already when a write
   * failed), their inventory, and whether that inventory is written yet.
   */
  gpus: readonly GpuFacts[] | string | undefined;
  inventory: string | undefined;
  problem: string | null;
  factsWritten: boolean;
  /** When its last_heartbeat_at was last written. */
  touchedMs: number;
}

/** A row for `nodes`: heard at `heardMs`; `gpus` JSON, or null: none reported, keep what is written. */
export interface NodeRowUpdate {
  readonly id: string;
  readonly heardMs: number;
  readonly gpus: string | null;
  readonly problem: string | null;
}

export interface Silent {
  readonly clusterId: string;
  readonly nodeIds: readonly string[];
}

export class NodeLiveness {
  private readonly nodes = new Map<string, Node>();
  /** Cluster id → its agent's declared interval. */
  private readonly intervals = new Map<string, number>();

  constructor(private readonly touchEveryMs = HEARTBEAT_WRITE_EVERY_MS) {}

  /** Forget everything: this process begins to serve the market (a start, a takeover). */
  reset(): void {
    this.nodes.clear();
    this.intervals.clear();
  }

  /** How many nodes are watched. */
  get size(): number {
    return this.nodes.size;
  }

  /**
   * The cluster's agent attached, or this process began to serve with the
   * cluster attached: its nodes are watched, silence counted from `nowMs`.
   */
  watch(
    clusterId: string,
    heartbeatMs: number,
    nodes: readonly { id: string; status?: NodeStatus | undefined }[],
    nowMs: number,
  ): void {
    this.intervals.set(clusterId, heartbeatMs);
    for (const n of nodes) {
      const known = this.nodes.get(n.id);
      if (known !== undefined) {
        known.lastHeardMs = Math.max(known.lastHeardMs, nowMs);
        continue;
      }
      this.nodes.set(n.id, {
        id: n.id,
        clusterId,
        lastHeardMs: nowMs,
        status: n.status,
        gpus: undefined,
        inventory: undefined,
        problem: null,
        factsWritten: true,
        touchedMs: nowMs,
      });
    }
  }

  /** Is the cluster watched (its agent attached)? */
  watches(clusterId: string): boolean {
    return this.intervals.has(clusterId);
  }

  /** A heartbeat of `clusterId` reported these nodes at `nowMs`. */
  heard(clusterId: string, heartbeatMs: number, facts: readonly NodeFacts[], nowMs: number): void {
    this.intervals.set(clusterId, heartbeatMs);
    for (const f of facts) {
      let n = this.nodes.get(f.id);
      if (n === undefined) {
        n = {
          id: f.id,
          clusterId,
          lastHeardMs: nowMs,
          status: undefined,
          gpus: undefined,
          inventory: undefined,
          problem: null,
          factsWritten: true,
          touchedMs: -Infinity,
        };
        this.nodes.set(f.id, n);
      }
      n.lastHeardMs = Math.max(n.lastHeardMs, nowMs);
      const inventory = inventoryOf(f.gpus);
      if (inventory !== n.inventory || f.problem !== n.problem) {
        n.inventory = inventory;
        n.problem = f.problem;
        n.factsWritten = false;
        n.gpus = f.gpus;
      } else if (nowMs - n.touchedMs >= this.touchEveryMs || n.gpus === undefined) {
        // Its readings are written at the next touch: kept only then, so
        // that thousands of nodes' GPU lists do not all live on between
        // heartbeats (garbage for the old generation).
        n.gpus = f.gpus;
      }
    }
  }

  /**
   * This process served nothing for a while (it did not own the market for
   * a spell, or its event loop stalled): heartbeats were refused or not
   * read meanwhile, so silence is counted again from `nowMs`.
   */
  resumed(nowMs: number): void {
    for (const n of this.nodes.values()) n.lastHeardMs = Math.max(n.lastHeardMs, nowMs);
  }

  /** The statuses the book gave these nodes (a heartbeat's answer, the sweep's). */
  saw(statuses: readonly { nodeId: string; status: NodeStatus }[]): void {
    for (const s of statuses) {
      const n = this.nodes.get(s.nodeId);
      if (n !== undefined) n.status = s.status;
    }
  }

  /**
   * D29: nodes silent for SILENT_INTERVALS of their agent's interval that
   * the book does not already hold offline, by cluster.
   */
  silent(nowMs: number): Silent[] {
    const byCluster = new Map<string, string[]>();
    for (const n of this.nodes.values()) {
      if (n.status === 'offline') continue;
      const interval = this.intervals.get(n.clusterId);
      if (interval === undefined) continue;
      if (n.lastHeardMs >= nowMs - SILENT_INTERVALS * interval) continue;
      let ids = byCluster.get(n.clusterId);
      if (ids === undefined) {
        ids = [];
        byCluster.set(n.clusterId, ids);
      }
      ids.push(n.id);
    }
    return [...byCluster].map(([clusterId, nodeIds]) => ({ clusterId, nodeIds }));
  }

  /**
   * The rows to write now: nodes whose facts changed, and, at most
   * `maxTouches` of them, the longest untouched first, nodes heard since
   * their last_heartbeat_at was written more than `touchEveryMs` ago; in id
   * order. Nodes all heard first at one moment would otherwise all fall due
   * together, every `touchEveryMs`: one large write instead of a steady
   * trickle. They count as written: `unwritten()` puts back what failed.
   */
  dirty(nowMs: number, maxTouches = Infinity): NodeRowUpdate[] {
    const rows: NodeRowUpdate[] = [];
    const due: Node[] = [];
    for (const n of this.nodes.values()) {
      if (!n.factsWritten) {
        this.take(n, nowMs, rows);
        continue;
      }
      if (n.lastHeardMs > n.touchedMs && nowMs - n.touchedMs >= this.touchEveryMs) due.push(n);
    }
    if (due.length > maxTouches) due.sort((a, b) => a.touchedMs - b.touchedMs);
    for (const n of due.slice(0, maxTouches)) this.take(n, nowMs, rows);
    return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  private take(n: Node, nowMs: number, rows: NodeRowUpdate[]): void {
    const gpus = n.gpus;
    rows.push({
      id: n.id,
      heardMs: n.lastHeardMs,
      gpus: gpus === undefined ? null : typeof gpus === 'string' ? gpus : JSON.stringify(gpus),
      problem: n.problem,
    });
    n.factsWritten = true;
    n.touchedMs = nowMs;
    n.gpus = undefined;
  }

  /** How often each node's heartbeat time is written. */
  get touchIntervalMs(): number {
    return this.touchEveryMs;
  }

  /** These rows were not written (the database failed, a row was locked): write them next time. */
  unwritten(rows: readonly NodeRowUpdate[]): void {
    for (const r of rows) {
      const n = this.nodes.get(r.id);
      if (n === undefined) continue;
      if (r.gpus !== null) {
        n.factsWritten = false;
        n.gpus ??= r.gpus;
      }
      n.touchedMs = -Infinity;
    }
  }
}
