// The clusters agents call about, kept in memory: every agent call names
// its cluster, and a heartbeat needs its nodes' hostnames, so reading them
// from PostgreSQL on every call would make agent traffic cost the database
// in proportion to its rate. A cluster's nodes never change once the admin
// API made them (D31), so they are read once; the cluster's row (its
// declared heartbeat interval) is read again after `ttlMs` (10 minutes),
// Attach updates it here when it writes it, and the service forgets it all
// when it begins to serve the market again (a takeover: another process may
// have taken Attaches meanwhile). Unknown clusters are not remembered.

import type { Queryable } from '../db/database.js';
import type { ClusterRow } from './provider-context.js';

export interface ClusterNode {
  readonly id: string;
  readonly hostname: string;
}

export interface KnownCluster {
  readonly row: ClusterRow;
  /** Its nodes by hostname (lower case, as the admin API stores them). */
  readonly nodes: ReadonlyMap<string, ClusterNode>;
}

interface Entry {
  cluster: KnownCluster;
  readAt: number;
}

export class AgentClusters {
  private readonly entries = new Map<string, Entry>();
  /** One read per cluster at a time, however many calls ask at once. */
  private readonly reading = new Map<string, Promise<KnownCluster | undefined>>();

  constructor(
    private readonly db: Queryable,
    private readonly ttlMs = 600_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The cluster and its nodes, or undefined when there is no such cluster. */
  get(clusterId: string): Promise<KnownCluster | undefined> {
    const entry = this.entries.get(clusterId);
    if (entry !== undefined && entry.readAt + this.ttlMs > this.now())
      return Promise.resolve(entry.cluster);
    let read = this.reading.get(clusterId);
    if (read === undefined) {
      read = this.read(clusterId, entry?.cluster.nodes).finally(() =>
        this.reading.delete(clusterId),
      );
      this.reading.set(clusterId, read);
    }
    return read;
  }

  /** Forget every cluster (this process begins to serve the market again). */
  clear(): void {
    this.entries.clear();
  }

  /** Attach wrote the cluster's declared interval. */
  attached(clusterId: string, heartbeatMs: number): void {
    const entry = this.entries.get(clusterId);
    if (entry === undefined) return;
    entry.cluster = { ...entry.cluster, row: { ...entry.cluster.row, heartbeat_ms: heartbeatMs } };
  }

  private async read(
    clusterId: string,
    known: ReadonlyMap<string, ClusterNode> | undefined,
  ): Promise<KnownCluster | undefined> {
    const readAt = this.now();
    const [row] = await this.db.query<ClusterRow>(
      'SELECT id, provider_account_id, gpu_type, zone, heartbeat_ms FROM clusters WHERE id = $1',
      [clusterId],
    );
    if (row === undefined) return undefined;
    let nodes = known;
    if (nodes === undefined) {
      const rows = await this.db.query<ClusterNode>(
        'SELECT id, hostname FROM nodes WHERE cluster_id = $1 ORDER BY hostname',
        [clusterId],
      );
      nodes = new Map(rows.map((n) => [n.hostname, n]));
    }
    const cluster: KnownCluster = { row, nodes };
    this.entries.set(clusterId, { cluster, readAt });
    return cluster;
  }
}
