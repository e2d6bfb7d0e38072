// A test double of the exchange for the agent's end-to-end tests: a real
// gRPC server implementing AgentService (agent.proto) on loopback, and the
// exchange's side of NATS JetStream (a stream and consumers of the test's
// own, configured as the exchange's JetStream publisher does, under a
// subject root other than `gpux` so it overlaps no other stream). It keeps
// the clusters, leases and sells the tests set and records every call.

import { randomBytes } from 'node:crypto';

import { Server, ServerCredentials, status } from '@grpc/grpc-js';
import type { Metadata, ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { AgentServiceService, NodeStatus } from '@gpux/proto';
import type { AgentServiceServer, EventSource, Lease, Node, SellOrder } from '@gpux/proto';
import {
  SUBJECTS,
  SUBJECT_ROOT,
  agentConsumerName,
  agentInboxPrefix,
  leaseNamespace,
  leaseUser,
  newId,
  sshUserOf,
} from '@gpux/shared';
import type { LeaseProvisionEvent, LeaseRevokeEvent } from '@gpux/shared';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { connect, nanos } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';

import { sellOrderOf } from '../agent/src/testing/fake-exchange.js';
import type { AgentSettings } from './support/agent-process.js';

export interface RecordedCall {
  readonly method: string;
  readonly request: Record<string, unknown>;
  /** Over mutual TLS: the serial number of the client certificate the call came with. */
  readonly clientCertSerial: string | undefined;
}

interface Cluster {
  readonly nodes: Node[];
  readonly leases: Map<string, Lease>;
  readonly sells: SellOrder[];
  readonly events: EventSource;
}

export interface DoubleOptions {
  readonly natsUrl: string;
  /** A delivered event not acked within this is delivered again. */
  readonly ackWaitMs: number;
  /** Serve gRPC over TLS; with `clientCaPem`, clients must present a certificate it signed. */
  readonly tls?: {
    readonly keyPem: Buffer;
    readonly certPem: Buffer;
    readonly clientCaPem?: Buffer;
  };
}

export class ExchangeDouble {
  readonly token = `gpux_${randomBytes(16).toString('hex')}`;
  readonly calls: RecordedCall[] = [];
  readonly clusters = new Map<string, Cluster>();
  /** Methods answered with UNAVAILABLE while listed. */
  readonly unavailable = new Set<string>();
  readonly stream = `AGENT_TEST_${randomBytes(4).toString('hex')}`;
  readonly root = `gpuxagent${randomBytes(4).toString('hex')}`;
  port = 0;
  private readonly server = new Server();
  private nc: NatsConnection | undefined;
  private jsm: JetStreamManager | undefined;
  private js: JetStreamClient | undefined;

  constructor(private readonly o: DoubleOptions) {}

  async start(): Promise<void> {
    this.server.addService(AgentServiceService, this.service());
    this.port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync('127.0.0.1:0', this.credentials(), (err, port) =>
        err === null ? resolve(port) : reject(err),
      ),
    );
    await this.connectNats();
  }

  /** (Again, after a server restart: the stream and consumers are on the server's disk.) */
  async connectNats(): Promise<void> {
    this.nc = await connect({
      servers: this.o.natsUrl.replace('nats://', ''),
      maxReconnectAttempts: -1,
      reconnectTimeWait: 200,
    });
    this.jsm = await jetstreamManager(this.nc);
    this.js = jetstream(this.nc);
    try {
      await this.jsm.streams.info(this.stream);
    } catch {
      await this.jsm.streams.add({
        name: this.stream,
        subjects: [`${this.root}.cluster.>`],
        duplicate_window: nanos(120_000),
      });
    }
  }

  private credentials(): ServerCredentials {
    const tls = this.o.tls;
    if (tls === undefined) return ServerCredentials.createInsecure();
    return ServerCredentials.createSsl(
      tls.clientCaPem ?? null,
      [{ private_key: tls.keyPem, cert_chain: tls.certPem }],
      tls.clientCaPem !== undefined,
    );
  }

  get url(): string {
    return `127.0.0.1:${this.port}`;
  }

  /**
   * The settings of an agent of `clusterId` against this double
   * (support/agent-process.ts): its gRPC address and token, its NATS, the
   * state directory, an SSH gateway on a free loopback port, a heartbeat a second.
   */
  agentSettings(clusterId: string, stateDir: string): AgentSettings {
    return {
      EXCHANGE_GRPC_URL: this.url,
      GPUX_TOKEN: this.token,
      GPUX_CLUSTER_ID: clusterId,
      NATS_URL: this.o.natsUrl,
      GPUX_STATE_DIR: stateDir,
      GPUX_SSH_LISTEN: '127.0.0.1:0',
      GPUX_HEARTBEAT_SECONDS: '1',
    };
  }

  /** A cluster registered through the admin API (D31), with its agent's durable consumer. */
  async addCluster(hostnames: readonly string[]): Promise<string> {
    const clusterId = newId('cls_');
    const consumer = agentConsumerName(clusterId);
    const filterSubject = this.rooted(SUBJECTS.cluster(clusterId));
    await this.jsm?.consumers.add(this.stream, {
      durable_name: consumer,
      filter_subject: filterSubject,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: nanos(this.o.ackWaitMs),
      max_deliver: -1,
    });
    this.clusters.set(clusterId, {
      nodes: hostnames.map((hostname) => ({
        nodeId: newId('nod_'),
        hostname,
        status: NodeStatus.NODE_STATUS_AVAILABLE,
        leaseId: '',
      })),
      leases: new Map(),
      sells: [],
      events: {
        stream: this.stream,
        consumer,
        filterSubject,
        inboxPrefix: agentInboxPrefix(clusterId),
      },
    });
    return clusterId;
  }

  /**
   * A lease filled on the cluster (live, status provisioning) and its
   * provision event. `listed: false` keeps it out of ListLeases, so only its
   * event can bring it to the agent (a test of the event path).
   */
  addLease(
    clusterId: string,
    hostnames: readonly string[],
    keys: string[] = [],
    listed = true,
  ): LeaseProvisionEvent {
    const leaseId = newId('lse_');
    const now = Date.now();
    const event: LeaseProvisionEvent = {
      kind: 'lease.provision',
      event_id: newId('evt_'),
      lease_id: leaseId,
      cluster_id: clusterId,
      account_id: newId('acc_'),
      namespace: leaseNamespace(leaseId),
      lease_user: leaseUser(leaseId),
      nodes: hostnames.map((hostname, i) => ({ hostname, ssh_user: sshUserOf(leaseId, i + 1) })),
      gpu_count: 8 * hostnames.length,
      start_ms: now,
      end_ms: now + 3_600_000,
      source_lease_id: null,
      ssh_public_keys: keys,
    };
    const cluster = this.cluster(clusterId);
    if (!listed) return event;
    cluster.leases.set(leaseId, {
      leaseId,
      namespace: event.namespace,
      leaseUser: event.lease_user,
      nodes: event.nodes.map((n) => ({ hostname: n.hostname, sshUser: n.ssh_user })),
      gpuCount: event.gpu_count,
      startTime: new Date(event.start_ms),
      endTime: new Date(event.end_ms),
      sshPublicKeys: keys,
      status: 'provisioning',
      sourceLeaseId: '',
    });
    for (const n of cluster.nodes) if (hostnames.includes(n.hostname)) n.leaseId = leaseId;
    return event;
  }

  /** The lease ends (terminated): gone from ListLeases, and its revoke event. */
  endLease(clusterId: string, leaseId: string): LeaseRevokeEvent {
    const cluster = this.cluster(clusterId);
    const lease = cluster.leases.get(leaseId);
    cluster.leases.delete(leaseId);
    for (const n of cluster.nodes) if (n.leaseId === leaseId) n.leaseId = '';
    return {
      kind: 'lease.revoke',
      event_id: newId('evt_'),
      lease_id: leaseId,
      cluster_id: clusterId,
      namespace: leaseNamespace(leaseId),
      nodes: lease?.nodes.map((n) => n.hostname) ?? [],
      reason: 'terminated',
      at_ms: Date.now(),
    };
  }

  /** Publishes an event under `msgId` (its event id unless a replay is simulated). */
  async publish(
    event: LeaseProvisionEvent | LeaseRevokeEvent,
    msgId = event.event_id,
  ): Promise<void> {
    const subject =
      event.kind === 'lease.provision'
        ? SUBJECTS.leaseProvision(event.cluster_id)
        : SUBJECTS.leaseRevoke(event.cluster_id);
    await this.js?.publish(this.rooted(subject), JSON.stringify(event), { msgID: msgId });
  }

  /** Every event of the cluster delivered and acked. */
  async eventsDone(clusterId: string): Promise<boolean> {
    const info = await this.jsm?.consumers.info(this.stream, agentConsumerName(clusterId));
    return info !== undefined && info.num_pending === 0 && info.num_ack_pending === 0;
  }

  of(method: string, clusterId?: string): Record<string, unknown>[] {
    return this.calls
      .filter(
        (c) =>
          c.method === method && (clusterId === undefined || c.request['clusterId'] === clusterId),
      )
      .map((c) => c.request);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()));
    for (const clusterId of this.clusters.keys()) {
      await this.jsm?.consumers
        .delete(this.stream, agentConsumerName(clusterId))
        .catch(() => undefined);
    }
    await this.jsm?.streams.delete(this.stream).catch(() => undefined);
    await this.nc?.close();
  }

  private rooted(subject: string): string {
    return this.root + subject.slice(SUBJECT_ROOT.length);
  }

  private cluster(clusterId: string): Cluster {
    const c = this.clusters.get(clusterId);
    if (c === undefined) throw new Error(`no cluster ${clusterId}`);
    return c;
  }

  /** Token check, recording, unavailability, unknown cluster: what every method does first. */
  private unary<Req extends { clusterId: string }, Res>(
    method: string,
    answer: (req: Req, cluster: Cluster) => Res,
  ): (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void {
    return (call, callback) => {
      const req = call.request;
      this.calls.push({
        method,
        request: { ...req },
        clientCertSerial: call.getAuthContext().sslPeerCertificate?.serialNumber,
      });
      if (!authorized(call.metadata, this.token)) {
        callback({ code: status.UNAUTHENTICATED, details: 'unknown token' });
        return;
      }
      if (this.unavailable.has(method)) {
        callback({ code: status.UNAVAILABLE, details: 'down for the test' });
        return;
      }
      const cluster = this.clusters.get(req.clusterId);
      if (cluster === undefined) {
        callback({ code: status.NOT_FOUND, details: `no cluster ${req.clusterId}` });
        return;
      }
      callback(null, answer(req, cluster));
    };
  }

  private service(): AgentServiceServer {
    return {
      attach: this.unary('attach', (req, c) => {
        for (const n of c.nodes) n.status = NodeStatus.NODE_STATUS_ONLINE;
        return {
          clusterId: req.clusterId,
          gpuType: 'h100',
          zone: 'us-west-1',
          nodes: c.nodes,
          events: c.events,
          offlineAfterSeconds: req.heartbeatIntervalSeconds * 3,
        };
      }),
      heartbeat: this.unary('heartbeat', (_req, c) => ({ nodes: c.nodes })),
      listSells: this.unary('listSells', (_req, c) => ({ orders: c.sells })),
      publishSell: this.unary('publishSell', (req, c) => {
        const order = sellOrderOf(newId('ord_'), req, Date.now());
        c.sells.push(order);
        return { result: { $case: 'order' as const, value: order } };
      }),
      withdrawSell: this.unary('withdrawSell', (req, c) => {
        const i = c.sells.findIndex((s) => s.orderId === req.orderId);
        const [gone] = i === -1 ? [] : c.sells.splice(i, 1);
        return { cancelledNodes: gone?.remainingNodes ?? 0 };
      }),
      listLeases: this.unary('listLeases', (_req, c) => ({
        leases: [...c.leases.values()],
        asOf: new Date(),
      })),
      reportProvisioned: this.unary('reportProvisioned', (req, c) => {
        const lease = c.leases.get(req.leaseId);
        if (lease === undefined) return { leaseStatus: 'terminated' };
        lease.status = 'active';
        return { leaseStatus: 'active' };
      }),
      reportRevoked: this.unary('reportRevoked', () => ({ leaseStatus: 'terminated' })),
      reportFailed: this.unary('reportFailed', (req, c) => {
        c.leases.delete(req.leaseId);
        return { leaseStatus: 'failed' };
      }),
    };
  }
}

function authorized(metadata: Metadata, token: string): boolean {
  return metadata.get('authorization')[0] === `Bearer ${token}`;
}
