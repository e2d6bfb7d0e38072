// An in-memory exchange for the agent's unit tests (no gRPC): it records
// every call, answers from plain fields the test sets, and fails a call on
// demand. The gRPC double of the end-to-end tests lives in test/.

import { status } from '@grpc/grpc-js';
import { NodeStatus } from '@gpux/proto';
import type {
  AttachRequest,
  AttachResponse,
  HeartbeatRequest,
  HeartbeatResponse,
  Lease,
  ListLeasesResponse,
  ListSellsResponse,
  Node,
  PublishSellRequest,
  PublishSellResponse,
  Refusal,
  ReportProvisionedRequest,
  ReportResponse,
  SellOrder,
  WithdrawSellResponse,
} from '@gpux/proto';
import { SUBJECTS, agentConsumerName, agentInboxPrefix } from '@gpux/shared';

import { ExchangeError } from '../exchange/exchange-client.js';
import type { ExchangeApi } from '../exchange/exchange-client.js';

/**
 * The sell order the exchange makes of a PublishSell at `nowMs`: its window
 * from now; D12: it leaves the book when no 1 h lease fits what is left.
 */
export function sellOrderOf(orderId: string, req: PublishSellRequest, nowMs: number): SellOrder {
  return {
    orderId,
    nodes: req.nodes,
    priceCents: req.priceCents,
    windowEnd: new Date(nowMs + req.windowHours * 3_600_000),
    expiresAt: new Date(nowMs + (req.windowHours - 1) * 3_600_000),
    remainingNodes: req.nodes,
  };
}

export interface Call {
  readonly method: string;
  readonly request: unknown;
}

export class FakeExchange implements ExchangeApi {
  readonly calls: Call[] = [];
  nodes: Node[];
  leases: Lease[] = [];
  sells: SellOrder[] = [];
  /** Set: PublishSell answers with this refusal. */
  refusal: Refusal | undefined;
  /** Methods that fail with UNAVAILABLE until removed. */
  readonly down = new Set<string>();
  /** Methods answered with this error (e.g. INVALID_ARGUMENT) until removed. */
  readonly failing = new Map<string, ExchangeError>();
  private nextOrder = 1;

  constructor(
    readonly clusterId: string,
    hostnames: readonly string[],
  ) {
    this.nodes = hostnames.map((hostname, i) => ({
      nodeId: `nod_${i + 1}`,
      hostname,
      status: NodeStatus.NODE_STATUS_ONLINE,
      leaseId: '',
    }));
  }

  of(method: string): unknown[] {
    return this.calls.filter((c) => c.method === method).map((c) => c.request);
  }

  private record(method: string, request: unknown): void {
    this.calls.push({ method, request });
    if (this.down.has(method)) {
      throw new ExchangeError(method, status.UNAVAILABLE, 'the exchange is down (test)');
    }
    const failure = this.failing.get(method);
    if (failure !== undefined) throw failure;
  }

  attach(req: AttachRequest): Promise<AttachResponse> {
    this.record('attach', req);
    return Promise.resolve({
      clusterId: this.clusterId,
      gpuType: 'h100',
      zone: 'us-west-1',
      nodes: this.nodes,
      events: {
        stream: 'GPUX_EVENTS',
        consumer: agentConsumerName(this.clusterId),
        filterSubject: SUBJECTS.cluster(this.clusterId),
        inboxPrefix: agentInboxPrefix(this.clusterId),
      },
      offlineAfterSeconds: req.heartbeatIntervalSeconds * 3,
    });
  }

  heartbeat(req: HeartbeatRequest): Promise<HeartbeatResponse> {
    this.record('heartbeat', req);
    return Promise.resolve({ nodes: this.nodes });
  }

  listSells(clusterId: string): Promise<ListSellsResponse> {
    this.record('listSells', { clusterId });
    return Promise.resolve({ orders: this.sells.filter((s) => s.remainingNodes > 0) });
  }

  publishSell(req: PublishSellRequest): Promise<PublishSellResponse> {
    this.record('publishSell', req);
    if (this.refusal !== undefined) {
      return Promise.resolve({ result: { $case: 'refusal', value: this.refusal } });
    }
    const order = sellOrderOf(`ord_${this.nextOrder++}`, req, Date.now());
    this.sells.push(order);
    return Promise.resolve({ result: { $case: 'order', value: order } });
  }

  withdrawSell(clusterId: string, orderId: string): Promise<WithdrawSellResponse> {
    this.record('withdrawSell', { clusterId, orderId });
    const order = this.sells.find((s) => s.orderId === orderId);
    const cancelledNodes = order?.remainingNodes ?? 0;
    this.sells = this.sells.filter((s) => s.orderId !== orderId);
    return Promise.resolve({ cancelledNodes });
  }

  listLeases(clusterId: string): Promise<ListLeasesResponse> {
    this.record('listLeases', { clusterId });
    return Promise.resolve({ leases: this.leases, asOf: new Date() });
  }

  reportProvisioned(req: ReportProvisionedRequest): Promise<ReportResponse> {
    this.record('reportProvisioned', req);
    const lease = this.leases.find((l) => l.leaseId === req.leaseId);
    if (lease !== undefined) lease.status = 'active';
    return Promise.resolve({ leaseStatus: 'active' });
  }

  reportRevoked(clusterId: string, leaseId: string): Promise<ReportResponse> {
    this.record('reportRevoked', { clusterId, leaseId });
    return Promise.resolve({ leaseStatus: 'terminated' });
  }

  reportFailed(clusterId: string, leaseId: string, reason: string): Promise<ReportResponse> {
    this.record('reportFailed', { clusterId, leaseId, reason });
    return Promise.resolve({ leaseStatus: 'failed' });
  }

  close(): void {}
}
