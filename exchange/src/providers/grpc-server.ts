// The exchange's gRPC server for the agents (D29, proto/agent.proto) on
// GRPC_PORT. Every call is authenticated by the provider's token in the
// `authorization` metadata (UNAUTHENTICATED without a known token,
// PERMISSION_DENIED without the `provider` scope or for another provider's
// cluster). TLS by configuration: a server certificate and key, and, when a
// client CA is given, client certificates are required (docs/providers.md).
// Every field is bounded (agent-limits.ts), checked before anything is
// read or written. Each provider has its share of calls (agent-share.ts):
// its own limits, apart from the REST limits of D18, which agents' calls
// do not count in.

import { readFileSync } from 'node:fs';

import { Metadata, Server, ServerCredentials, status } from '@grpc/grpc-js';
import type { ServiceError, handleUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { AgentServiceService, NodeStatus } from '@gpux/proto';
import type { AgentServiceServer, Node } from '@gpux/proto';
import { GpuxError } from '@gpux/shared';

import type { Principal } from '../accounts/accounts.js';
import { bearerToken } from '../auth/tokens.js';
import {
  checkAttach,
  checkHeartbeat,
  checkReportFailed,
  checkReportProvisioned,
} from './agent-input.js';
import { MAX_MESSAGE_BYTES } from './agent-limits.js';
import { AgentShare } from './agent-share.js';
import type { AgentCallKind, AgentShareLimits, Exhausted } from './agent-share.js';
import { attach, heartbeat } from './node-health.js';
import type { NodeView } from './node-health.js';
import { AgentCallError, ownKnownCluster } from './provider-context.js';
import type { ProviderContext } from './provider-context.js';
import { listLeases, reportFailed, reportProvisioned, reportRevoked } from './provider-leases.js';
import { listSells, publishSell, withdrawSell } from './provider-sells.js';

export interface GrpcTls {
  readonly certFile: string;
  readonly keyFile: string;
  /** When set, agents must present a client certificate signed by this CA. */
  readonly clientCaFile?: string | undefined;
}

export interface AgentServerOptions {
  readonly host: string;
  /** 0: a free port (the handle says which). */
  readonly port: number;
  readonly tls?: GrpcTls | undefined;
  /** Each provider's share (agent-share.ts); default DEFAULT_AGENT_SHARE. */
  readonly limits?: AgentShareLimits | undefined;
}

export interface AgentServer {
  readonly port: number;
  /** Stop taking calls; calls in flight finish. */
  close(): Promise<void>;
}

const STATUS: Record<NodeView['status'], NodeStatus> = {
  available: NodeStatus.NODE_STATUS_AVAILABLE,
  online: NodeStatus.NODE_STATUS_ONLINE,
  offline: NodeStatus.NODE_STATUS_OFFLINE,
};

function node(n: NodeView): Node {
  return {
    nodeId: n.nodeId,
    hostname: n.hostname,
    status: STATUS[n.status],
    leaseId: n.leaseId ?? '',
  };
}

function credentials(tls: GrpcTls | undefined): ServerCredentials {
  if (tls === undefined) return ServerCredentials.createInsecure();
  return ServerCredentials.createSsl(
    tls.clientCaFile === undefined ? null : readFileSync(tls.clientCaFile),
    [{ private_key: readFileSync(tls.keyFile), cert_chain: readFileSync(tls.certFile) }],
    tls.clientCaFile !== undefined,
  );
}

async function callerOf(ctx: ProviderContext, metadata: Metadata): Promise<Principal> {
  const [header] = metadata.get('authorization');
  const token = typeof header === 'string' ? bearerToken(header) : undefined;
  if (token === undefined) {
    throw new AgentCallError(status.UNAUTHENTICATED, 'send authorization: Bearer <provider token>');
  }
  const principal = await ctx.directory.principal(token);
  if (principal === undefined)
    throw new AgentCallError(status.UNAUTHENTICATED, 'unknown or revoked token');
  if (!principal.scopes.has('provider')) {
    throw new AgentCallError(status.PERMISSION_DENIED, 'this token lacks the "provider" scope');
  }
  return principal;
}

/**
 * The caller's share (agent-share.ts): a call in flight more, and one call
 * of `kind` for its cluster. Returns what ends the call's place in flight.
 */
async function admit(
  ctx: ProviderContext,
  share: AgentShare,
  caller: Principal,
  kind: AgentCallKind,
  clusterId: string,
): Promise<() => void> {
  const clusters = await ctx.directory.clustersOf(caller.accountId);
  const leave = share.enter(caller.accountId, clusters.length);
  if (typeof leave !== 'function') throw exhausted(leave);
  try {
    const known = await ownKnownCluster(ctx, caller, clusterId);
    const over = share.take(kind, {
      id: known.row.id,
      nodes: known.nodes.size,
      heartbeatMs: known.row.heartbeat_ms,
    });
    if (over !== undefined) throw exhausted(over);
    return leave;
  } catch (err) {
    leave();
    throw err;
  }
}

const exhausted = (e: Exhausted): AgentCallError =>
  new AgentCallError(status.RESOURCE_EXHAUSTED, e.message, e.retryAfterMs);

/**
 * One RPC: authenticate, take the caller's share, run (which checks the
 * request's bounds first), and turn what is thrown into a gRPC status.
 */
function unary<Req extends { clusterId: string }, Res>(
  ctx: ProviderContext,
  share: AgentShare,
  method: string,
  kind: AgentCallKind,
  run: (caller: Principal, request: Req) => Promise<Res>,
): handleUnaryCall<Req, Res> {
  return (call, callback: sendUnaryData<Res>) => {
    // A standby (docs/ownership.md) takes no agent call: not even a token lookup.
    if (ctx.serving !== undefined && !ctx.serving()) {
      const message =
        'this exchange process does not own the market now (a standby); retry shortly';
      callback({ code: status.UNAVAILABLE, details: message, message });
      return;
    }
    let leave: (() => void) | undefined;
    callerOf(ctx, call.metadata)
      .then(async (caller) => {
        leave = await admit(ctx, share, caller, kind, call.request.clusterId);
        return run(caller, call.request);
      })
      .then(
        (response) => callback(null, response),
        (err: unknown) => callback(toServiceError(ctx, method, err)),
      )
      .finally(() => leave?.());
  };
}

function toServiceError(ctx: ProviderContext, method: string, err: unknown): Partial<ServiceError> {
  if (err instanceof AgentCallError) {
    if (err.retryAfterMs === undefined)
      return { code: err.code, details: err.message, message: err.message };
    // The agent reads the time to wait from the trailing metadata (docs/providers.md).
    const trailers = new Metadata();
    trailers.set(RETRY_AFTER_MS, String(err.retryAfterMs));
    return { code: err.code, details: err.message, message: err.message, metadata: trailers };
  }
  // A rule of the API the request broke (a bad price, a time in the wrong form).
  if (err instanceof GpuxError && err.status < 500) {
    return { code: status.INVALID_ARGUMENT, details: err.message, message: err.message };
  }
  if (err instanceof GpuxError && err.code === 'unavailable') {
    return { code: status.UNAVAILABLE, details: err.message, message: err.message };
  }
  ctx.logger.error({ err, method }, 'agent call failed');
  return { code: status.INTERNAL, details: 'internal error', message: 'internal error' };
}

/** The trailing metadata key of the milliseconds to wait after RESOURCE_EXHAUSTED. */
export const RETRY_AFTER_MS = 'retry-after-ms';

export function agentService(ctx: ProviderContext, share: AgentShare): AgentServiceServer {
  return {
    attach: unary(ctx, share, 'Attach', 'read', async (caller, r) => {
      checkAttach(r);
      const a = await attach(ctx, caller, {
        clusterId: r.clusterId,
        heartbeatIntervalSeconds: r.heartbeatIntervalSeconds,
        agentVersion: r.agentVersion,
        provisioner: r.provisioner,
        host: r.host === undefined ? undefined : { ...r.host },
      });
      return {
        clusterId: a.cluster.id,
        gpuType: a.cluster.gpu_type,
        zone: a.cluster.zone,
        nodes: a.nodes.map(node),
        events: a.events,
        offlineAfterSeconds: a.offlineAfterSeconds,
      };
    }),
    heartbeat: unary(ctx, share, 'Heartbeat', 'heartbeat', async (caller, r) => {
      checkHeartbeat(r);
      const nodes = await heartbeat(
        ctx,
        caller,
        r.clusterId,
        r.nodes.map((n) => ({
          hostname: n.hostname,
          healthy: n.healthy,
          problem: n.problem,
          gpus: n.gpus.map((g) => ({ ...g })),
        })),
      );
      return { nodes: nodes.map(node) };
    }),
    listSells: unary(ctx, share, 'ListSells', 'read', async (caller, r) => ({
      orders: await listSells(ctx, caller, r.clusterId),
    })),
    publishSell: unary(ctx, share, 'PublishSell', 'sell', async (caller, r) => {
      const placed = await publishSell(ctx, caller, {
        clusterId: r.clusterId,
        nodes: r.nodes,
        priceCents: r.priceCents,
        windowHours: r.windowHours,
      });
      return 'ok' in placed
        ? { result: { $case: 'refusal', value: { code: placed.code, message: placed.message } } }
        : { result: { $case: 'order', value: placed } };
    }),
    withdrawSell: unary(ctx, share, 'WithdrawSell', 'sell', async (caller, r) => ({
      cancelledNodes: await withdrawSell(ctx, caller, r.clusterId, r.orderId),
    })),
    listLeases: unary(ctx, share, 'ListLeases', 'read', async (caller, r) => {
      const { leases, asOf } = await listLeases(ctx, caller, r.clusterId);
      return {
        asOf,
        leases: leases.map((l) => ({
          ...l,
          nodes: [...l.nodes],
          sshPublicKeys: [...l.sshPublicKeys],
        })),
      };
    }),
    reportProvisioned: unary(ctx, share, 'ReportProvisioned', 'report', async (caller, r) => {
      checkReportProvisioned(r);
      return {
        leaseStatus: await reportProvisioned(ctx, caller, {
          clusterId: r.clusterId,
          leaseId: r.leaseId,
          sshEndpoints: r.sshEndpoints,
          sshHostKeys: r.sshHostKeys,
          kubeconfig: r.kubeconfig,
        }),
      };
    }),
    reportRevoked: unary(ctx, share, 'ReportRevoked', 'report', async (caller, r) => ({
      leaseStatus: await reportRevoked(ctx, caller, r.clusterId, r.leaseId),
    })),
    reportFailed: unary(ctx, share, 'ReportFailed', 'report', async (caller, r) => {
      checkReportFailed(r);
      return { leaseStatus: await reportFailed(ctx, caller, r) };
    }),
  };
}

export async function startAgentServer(
  ctx: ProviderContext,
  o: AgentServerOptions,
): Promise<AgentServer> {
  // The largest valid message, not grpc-js's 4 MiB: a larger one is
  // RESOURCE_EXHAUSTED before it is decoded (agent-limits.ts).
  const server = new Server({ 'grpc.max_receive_message_length': MAX_MESSAGE_BYTES });
  server.addService(AgentServiceService, agentService(ctx, new AgentShare(o.limits)));
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${o.port}`, credentials(o.tls), (err, bound) => {
      if (err === null) resolve(bound);
      else reject(err);
    });
  });
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
      }),
  };
}
