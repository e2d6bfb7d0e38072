// The part of the agents' service that runs beside the market (issue 18).
// The gRPC front (grpc-server.ts) takes every call in: it decodes it,
// authenticates the provider, takes its share and checks the request's
// bounds, and keeps the heartbeats (node-liveness.ts). What needs the books
// or the events comes here: the calls other than Heartbeat (`run`), and
// the nodes' statuses as heartbeats and silence report them (`reportNodes`),
// which go through the cluster's book (node-status.ts).
//
// On PostgreSQL the front runs in a process of its own (agent-host.ts)
// and reaches this over its IPC channel: a flood of agent
// calls then costs the thread that serves the customers nothing but these
// few messages. On the embedded PGlite (one connection, in this thread) and
// in tests the front calls it directly.

import type { AttachResponse, Node } from '@gpux/proto';
import { NodeStatus as ProtoNodeStatus } from '@gpux/proto';
import type { GpuType, Zone } from '@gpux/shared';

import type { Principal } from '../accounts/accounts.js';
import { attach } from './node-health.js';
import { setStatus } from './node-status.js';
import type { NodeStatus, NodeView } from './node-status.js';
import type { ProviderContext } from './provider-context.js';
import { listLeases, reportFailed, reportProvisioned, reportRevoked } from './provider-leases.js';
import { listSells, publishSell, withdrawSell } from './provider-sells.js';

/** The calls the front hands over whole, by their name in agent.proto. */
export type ForwardedMethod =
  | 'Attach'
  | 'ListSells'
  | 'PublishSell'
  | 'WithdrawSell'
  | 'ListLeases'
  | 'ReportProvisioned'
  | 'ReportRevoked'
  | 'ReportFailed';

/** What a heartbeat (or the silence of an agent) says a cluster's nodes are. */
export interface ClusterNodes {
  readonly clusterId: string;
  readonly gpuType: GpuType;
  readonly zone: Zone;
  /** Node id → the status reported (online: healthy; offline: unhealthy or silent). */
  readonly reported: readonly (readonly [string, 'online' | 'offline'])[];
}

export interface AgentBackend {
  /** A call other than Heartbeat, admitted and checked: its response message. */
  run(method: ForwardedMethod, caller: Principal, request: unknown): Promise<unknown>;
  /**
   * The statuses reported, applied through the clusters' books where they
   * differ from what the books hold; then every node of each cluster as
   * its book holds it, in the order of `reports`.
   */
  reportNodes(reports: readonly ClusterNodes[]): Promise<NodeView[][]>;
}

const STATUS: Record<NodeStatus, ProtoNodeStatus> = {
  available: ProtoNodeStatus.NODE_STATUS_AVAILABLE,
  online: ProtoNodeStatus.NODE_STATUS_ONLINE,
  offline: ProtoNodeStatus.NODE_STATUS_OFFLINE,
};

export function protoNode(n: NodeView): Node {
  return {
    nodeId: n.nodeId,
    hostname: n.hostname,
    status: STATUS[n.status],
    leaseId: n.leaseId ?? '',
  };
}

/** The backend of a process's own market: the handlers of agent.proto over its ProviderContext. */
export class MarketBackend implements AgentBackend {
  constructor(private readonly ctx: ProviderContext) {}

  async run(method: ForwardedMethod, caller: Principal, request: unknown): Promise<unknown> {
    const ctx = this.ctx;
    // The front decoded the request as this method's message and checked its bounds.
    const r = request as { clusterId: string; orderId: string; leaseId: string };
    switch (method) {
      case 'Attach': {
        const req = request as {
          clusterId: string;
          heartbeatIntervalSeconds: number;
          agentVersion: string;
          provisioner: string;
          host?: Record<string, unknown> | undefined;
        };
        const a = await attach(ctx, caller, {
          clusterId: req.clusterId,
          heartbeatIntervalSeconds: req.heartbeatIntervalSeconds,
          agentVersion: req.agentVersion,
          provisioner: req.provisioner,
          host: req.host === undefined ? undefined : { ...req.host },
        });
        const answer: AttachResponse = {
          clusterId: a.cluster.id,
          gpuType: a.cluster.gpu_type,
          zone: a.cluster.zone,
          nodes: a.nodes.map(protoNode),
          events: a.events,
          offlineAfterSeconds: a.offlineAfterSeconds,
        };
        return answer;
      }
      case 'ListSells':
        return { orders: await listSells(ctx, caller, r.clusterId) };
      case 'PublishSell': {
        const req = request as {
          clusterId: string;
          nodes: number;
          priceCents: number;
          windowHours: number;
        };
        const placed = await publishSell(ctx, caller, req);
        return 'ok' in placed
          ? { result: { $case: 'refusal', value: { code: placed.code, message: placed.message } } }
          : { result: { $case: 'order', value: placed } };
      }
      case 'WithdrawSell':
        return {
          cancelledNodes: await withdrawSell(ctx, caller, r.clusterId, r.orderId),
        };
      case 'ListLeases': {
        const { leases, asOf } = await listLeases(ctx, caller, r.clusterId);
        return {
          asOf,
          leases: leases.map((l) => ({
            ...l,
            nodes: [...l.nodes],
            sshPublicKeys: [...l.sshPublicKeys],
          })),
        };
      }
      case 'ReportProvisioned': {
        const req = request as Parameters<typeof reportProvisioned>[2];
        return { leaseStatus: await reportProvisioned(ctx, caller, req) };
      }
      case 'ReportRevoked':
        return { leaseStatus: await reportRevoked(ctx, caller, r.clusterId, r.leaseId) };
      case 'ReportFailed': {
        const req = request as Parameters<typeof reportFailed>[2];
        return { leaseStatus: await reportFailed(ctx, caller, req) };
      }
    }
  }

  /** Per cluster, the report being applied: the next one waits for it (the newest report wins). */
  private readonly applying = new Map<string, Promise<unknown>>();

  async reportNodes(reports: readonly ClusterNodes[]): Promise<NodeView[][]> {
    return Promise.all(reports.map((r) => this.inTurn(r)));
  }

  /**
   * A cluster's reports one after the other: each compares with the book
   * once the one before it has gone through, so an older report never
   * undoes a newer one.
   */
  private inTurn(r: ClusterNodes): Promise<NodeView[]> {
    const before = this.applying.get(r.clusterId) ?? Promise.resolve();
    const mine = before.then(
      () => this.reportCluster(r),
      () => this.reportCluster(r),
    );
    const settled = mine.catch(() => undefined);
    this.applying.set(r.clusterId, settled);
    void settled.then(() => {
      if (this.applying.get(r.clusterId) === settled) this.applying.delete(r.clusterId);
    });
    return mine;
  }

  private async reportCluster(r: ClusterNodes): Promise<NodeView[]> {
    const writer = this.ctx.market.writer(r.gpuType, r.zone);
    await writer.ensureCluster(r.clusterId);
    const held = writer.view.clusters.get(r.clusterId);
    if (held !== undefined) {
      const byId = new Map(held.nodes.map((n) => [n.id, n]));
      const changes = new Map<string, NodeStatus>();
      for (const [id, status] of r.reported) {
        const n = byId.get(id);
        if (n !== undefined && n.status !== status) changes.set(id, status);
      }
      if (changes.size > 0) {
        await setStatus(this.ctx, { id: r.clusterId, gpu_type: r.gpuType, zone: r.zone }, changes);
      }
    }
    // As the book holds the cluster now (after the change, if any).
    const now = writer.view.clusters.get(r.clusterId);
    if (now === undefined) return [];
    return now.nodes
      .map((n) => ({
        nodeId: n.id,
        hostname: n.hostname,
        status: n.status,
        leaseId: now.leased.get(n.id),
      }))
      .sort((a, b) => (a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0));
  }
}
