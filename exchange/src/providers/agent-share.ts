// Each provider's share of the agents' gRPC service (issue 18), as D18 is
// for REST and apart from it: agents' calls count here, never in the REST
// limits. Every agent call names a cluster of the caller, so rates are
// counted per cluster (a provider's share grows with its clusters) and
// call kind, over sliding windows; calls in flight are bounded per provider.
// Past a limit the call is RESOURCE_EXHAUSTED with the time to wait
// (grpc-server.ts puts it in the trailing metadata as `retry-after-ms`).
// Kept in memory by this exchange process, like D18's counts.

export type AgentCallKind = 'heartbeat' | 'read' | 'sell' | 'report';

export interface AgentShareLimits {
  /** Heartbeats per cluster within each of its declared heartbeat intervals. */
  readonly heartbeatsPerInterval: number;
  /** Attach, ListSells and ListLeases per cluster and minute. */
  readonly readsPerMinute: number;
  /** PublishSell and WithdrawSell per cluster and minute, for every 10 nodes begun. */
  readonly sellsPerMinute: number;
  /** ReportProvisioned, ReportRevoked and ReportFailed, likewise. */
  readonly reportsPerMinute: number;
  /** Calls of one provider being answered at once, per cluster it has. */
  readonly callsInFlight: number;
}

export const DEFAULT_AGENT_SHARE: AgentShareLimits = {
  heartbeatsPerInterval: 2,
  readsPerMinute: 240,
  sellsPerMinute: 30,
  reportsPerMinute: 30,
  callsInFlight: 8,
};

/** The settings of each limit, named in the refusal so an operator knows what to raise. */
const SETTING: Record<AgentCallKind | 'inFlight', string> = {
  heartbeat: 'GPUX_AGENT_HEARTBEATS_PER_INTERVAL',
  read: 'GPUX_AGENT_READS_PER_MINUTE',
  sell: 'GPUX_AGENT_SELLS_PER_MINUTE',
  report: 'GPUX_AGENT_REPORTS_PER_MINUTE',
  inFlight: 'GPUX_AGENT_CALLS_IN_FLIGHT',
};

const WHAT: Record<AgentCallKind, string> = {
  heartbeat: 'heartbeats',
  read: 'attaches and lists',
  sell: 'sell changes',
  report: 'reports',
};

/**
 * A call over its provider's limit waits at least this long when no slot
 * has a known time to free (calls in flight end when they end).
 */
export const IN_FLIGHT_RETRY_MS = 250;

/** Heartbeats are counted over this part of the declared interval. */
export const HEARTBEAT_WINDOW = 0.9;

/** Sells and reports scale with a cluster's nodes: one share per 10 nodes begun. */
const NODES_PER_SHARE = 10;

export interface Exhausted {
  readonly retryAfterMs: number;
  readonly message: string;
}

/** What the share needs of a cluster. */
export interface SharedCluster {
  readonly id: string;
  readonly nodes: number;
  /** The declared heartbeat interval; null before the first Attach. */
  readonly heartbeatMs: number | null;
}

export class AgentShare {
  private readonly inFlight = new Map<string, number>();
  /** `kind:cluster` → times of the calls of the window, oldest first. */
  private readonly logs = new Map<string, number[]>();

  constructor(
    private readonly limits: AgentShareLimits = DEFAULT_AGENT_SHARE,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * A call of `accountId`, which has `clusters` clusters, starts: the
   * function to call when it ends, or why it may not start.
   */
  enter(accountId: string, clusters: number): (() => void) | Exhausted {
    const limit = this.limits.callsInFlight * Math.max(1, clusters);
    const n = this.inFlight.get(accountId) ?? 0;
    if (n >= limit) {
      return exhausted(
        IN_FLIGHT_RETRY_MS,
        `at most ${limit} calls of this provider at once (${SETTING.inFlight} per cluster)`,
      );
    }
    this.inFlight.set(accountId, n + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const left = (this.inFlight.get(accountId) ?? 1) - 1;
      if (left > 0) this.inFlight.set(accountId, left);
      else this.inFlight.delete(accountId);
    };
  }

  /** Count a call of `kind` for `cluster`, or say how long to wait. */
  take(kind: AgentCallKind, cluster: SharedCluster): Exhausted | undefined {
    const { limit, windowMs, per } = this.window(kind, cluster);
    const t = this.now();
    const key = `${kind}:${cluster.id}`;
    let log = this.logs.get(key);
    if (log === undefined) {
      log = [];
      this.logs.set(key, log);
    }
    let expired = 0;
    while (expired < log.length && (log[expired] as number) <= t - windowMs) expired++;
    if (expired > 0) log.splice(0, expired);
    if (log.length < limit) {
      log.push(t);
      return undefined;
    }
    // The window frees a slot when the oldest call of the last `limit` leaves it.
    const oldest = log[log.length - limit] as number;
    return exhausted(
      Math.max(1, oldest + windowMs - t),
      `${WHAT[kind]} of cluster ${cluster.id}: at most ${limit} ${per} (${SETTING[kind]})`,
    );
  }

  private window(
    kind: AgentCallKind,
    cluster: SharedCluster,
  ): { limit: number; windowMs: number; per: string } {
    const shares = Math.max(1, Math.ceil(cluster.nodes / NODES_PER_SHARE));
    switch (kind) {
      case 'heartbeat': {
        // Before its first Attach a cluster takes no heartbeat at all (node-health.ts).
        const intervalMs = cluster.heartbeatMs ?? 1_000;
        return {
          limit: this.limits.heartbeatsPerInterval,
          // "About" an interval: an agent's timer runs a little early or late,
          // and one heartbeat more between two of its own must still fit.
          windowMs: intervalMs * HEARTBEAT_WINDOW,
          per: `per declared interval of ${intervalMs / 1000} s (counted over ${HEARTBEAT_WINDOW * 100} % of it)`,
        };
      }
      case 'read':
        return { limit: this.limits.readsPerMinute, windowMs: 60_000, per: 'per minute' };
      case 'sell':
        return {
          limit: this.limits.sellsPerMinute * shares,
          windowMs: 60_000,
          per: 'per minute',
        };
      case 'report':
        return {
          limit: this.limits.reportsPerMinute * shares,
          windowMs: 60_000,
          per: 'per minute',
        };
    }
  }
}

function exhausted(retryAfterMs: number, limit: string): Exhausted {
  const ms = Math.ceil(retryAfterMs);
  return { retryAfterMs: ms, message: `${limit}; retry after ${ms} ms` };
}
