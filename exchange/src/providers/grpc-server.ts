// The exchange's gRPC server for the agents (D29, proto/agent.proto) on
// GRPC_PORT. Every call is authenticated by the provider's token in the
// `authorization` metadata (UNAUTHENTICATED without a known token,
// PERMISSION_DENIED without the `provider` scope or for another provider's
// cluster). TLS by configuration: a server certificate and key, and, when a
// client CA is given, client certificates are required (docs/providers.md).
// Every field is bounded (agent-limits.ts), checked before anything is
// read or written. Each provider has its share of calls (agent-share.ts):
// its own limits, apart from the REST limits of D18, which agents' calls
// do not count in. Heartbeats are kept here (agent-front.ts); what needs
// the market goes to its backend (agent-backend.ts), in this thread or, on
// PostgreSQL, from a process of its own (agent-host.ts).

import { readFileSync } from 'node:fs';

import { Metadata, Server, ServerCredentials, status } from '@grpc/grpc-js';
import type { ServiceError, handleUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { AgentServiceService, RETRY_AFTER_MS, grpcStatusOf } from '@gpux/proto';
import type { AgentServiceServer, AttachRequest, AttachResponse } from '@gpux/proto';
import { GpuxError } from '@gpux/shared';

import type { Principal } from '../accounts/accounts.js';
import type { ClusterRef } from '../accounts/directory.js';
import { bearerToken } from '../auth/tokens.js';
import { MarketBackend, protoNode } from './agent-backend.js';
import type { ForwardedMethod } from './agent-backend.js';
import type { KnownCluster } from './agent-clusters.js';
import { AgentFront } from './agent-front.js';
import type { FrontOptions, ReportedNode } from './agent-front.js';
import {
  checkAttach,
  checkCount,
  checkHeartbeat,
  checkReportFailed,
  checkReportProvisioned,
} from './agent-input.js';
import { MAX_MESSAGE_BYTES } from './agent-limits.js';
import { AgentShare } from './agent-share.js';
import type { AgentCallKind, AgentShareLimits, Exhausted } from './agent-share.js';
import { AgentCallError, invalid, ownKnownCluster } from './provider-context.js';
import type { ProviderContext } from './provider-context.js';

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

/** What the service works with where it runs (the exchange's process, or the agents' service process). */
export interface ServiceContext extends FrontOptions {
  /** Principals of agents' tokens and providers' clusters (accounts/directory.ts). */
  readonly directory: {
    principal(token: string): Promise<Principal | undefined>;
    clustersOf(accountId: string, fresh?: boolean): Promise<readonly ClusterRef[]>;
  };
  /** Each call's method and status code as answered (gpux_grpc_calls_total, metrics/). */
  readonly onCall?: (method: string, code: status) => void;
}

export interface AgentServer {
  readonly port: number;
  /** The heartbeats' side (tests ask it to sweep or write now). */
  readonly front: AgentFront;
  /** Stop taking calls; calls in flight finish; what heartbeats said is written. */
  close(): Promise<void>;
}

function credentials(tls: GrpcTls | undefined): ServerCredentials {
  if (tls === undefined) return ServerCredentials.createInsecure();
  return ServerCredentials.createSsl(
    tls.clientCaFile === undefined ? null : readFileSync(tls.clientCaFile),
    [{ private_key: readFileSync(tls.keyFile), cert_chain: readFileSync(tls.certFile) }],
    tls.clientCaFile !== undefined,
  );
}

async function callerOf(ctx: ServiceContext, metadata: Metadata): Promise<Principal> {
  const [header] = metadata.get('authorization');
  const token = typeof header === 'string' ? bearerToken(header) : undefined;
  if (token === undefined) {
    throw new AgentCallError(status.UNAUTHENTICATED, 'send authorization: Bearer <provider token>');
  }
  const principal = await ctx.directory.principal(token);
  if (principal === undefined)
    throw new AgentCallError(status.UNAUTHENTICATED, 'unknown or revoked token');
  // An operator suspended the provider: its agent is refused too (docs/api/admin.md).
  if (principal.suspended) {
    throw new GpuxError('account_suspended', `account ${principal.accountId} is suspended`);
  }
  if (!principal.scopes.has('provider')) {
    throw new AgentCallError(status.PERMISSION_DENIED, 'this token lacks the "provider" scope');
  }
  return principal;
}

/**
 * The caller's share (agent-share.ts): a call in flight more, and one call
 * of `kind` for its cluster. Returns the cluster and what ends the call's
 * place in flight.
 */
async function admit(
  ctx: ServiceContext,
  share: AgentShare,
  caller: Principal,
  kind: AgentCallKind,
  clusterId: string,
): Promise<{ known: KnownCluster; leave: () => void }> {
  const known = await ownKnownCluster(ctx, caller, clusterId);
  let clusters = await ctx.directory.clustersOf(caller.accountId);
  // A cluster made since the list was read (by the admin API, in another thread).
  if (!clusters.some((c) => c.id === known.row.id))
    clusters = await ctx.directory.clustersOf(caller.accountId, true);
  const leave = share.enter(caller.accountId, clusters.length);
  if (typeof leave !== 'function') throw exhausted(leave);
  try {
    const over = share.take(kind, {
      id: known.row.id,
      nodes: known.nodes.size,
      heartbeatMs: known.row.heartbeat_ms,
    });
    if (over !== undefined) throw exhausted(over);
    return { known, leave };
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
  ctx: ServiceContext,
  share: AgentShare,
  method: string,
  kind: AgentCallKind,
  run: (caller: Principal, request: Req, known: KnownCluster) => Promise<Res>,
): handleUnaryCall<Req, Res> {
  return (call, callback: sendUnaryData<Res>) => {
    // A standby (docs/ownership.md) takes no agent call: not even a token lookup.
    if (!ctx.serving()) {
      const message =
        'this exchange process does not own the market now (a standby); retry shortly';
      ctx.onCall?.(method, status.UNAVAILABLE);
      callback({ code: status.UNAVAILABLE, details: message, message });
      return;
    }
    let leave: (() => void) | undefined;
    callerOf(ctx, call.metadata)
      .then(async (caller) => {
        const admitted = await admit(ctx, share, caller, kind, call.request.clusterId);
        leave = admitted.leave;
        return run(caller, call.request, admitted.known);
      })
      .then(
        (response) => {
          ctx.onCall?.(method, status.OK);
          callback(null, response);
        },
        (err: unknown) => {
          const e = toServiceError(ctx.logger, method, err);
          ctx.onCall?.(method, e.code ?? status.UNKNOWN);
          callback(e);
        },
      )
      .finally(() => leave?.());
  };
}

/** A status with its message, and the wait in the trailing metadata when there is one. */
function answer(code: status, message: string, retryAfterMs?: number): Partial<ServiceError> {
  if (retryAfterMs === undefined) return { code, details: message, message };
  // The agent reads the time to wait from the trailing metadata (docs/providers.md).
  const trailers = new Metadata();
  trailers.set(RETRY_AFTER_MS, String(retryAfterMs));
  return { code, details: message, message, metadata: trailers };
}

/**
 * What is thrown → the gRPC status the agent gets: AgentCallError names its
 * status; a typed error of the catalogue (GpuxError) is answered by the one
 * table of proto/src/error-status.ts; anything else is INTERNAL, logged here
 * and not disclosed.
 */
export function toServiceError(
  logger: Pick<ServiceContext['logger'], 'error'>,
  method: string,
  err: unknown,
): Partial<ServiceError> {
  if (err instanceof AgentCallError) return answer(err.code, err.message, err.retryAfterMs);
  if (err instanceof GpuxError) {
    const code = grpcStatusOf(err.code);
    if (code !== status.INTERNAL) return answer(code, err.message);
  }
  logger.error({ err, method }, 'agent call failed');
  return { code: status.INTERNAL, details: 'internal error', message: 'internal error' };
}

/** How long calls in flight may run on when the service closes. */
const CLOSE_DEADLINE_MS = 5_000;

/** The trailing metadata key of the milliseconds to wait after RESOURCE_EXHAUSTED. */
export { RETRY_AFTER_MS };

/** A heartbeat's nodes, checked against its cluster: its own hostnames, each once. */
function reportedNodes(
  known: KnownCluster,
  r: Parameters<typeof checkHeartbeat>[0],
): ReportedNode[] {
  const clusterId = known.row.id;
  const nodes = known.nodes;
  checkCount(r.nodes, 'nodes', nodes.size, `cluster ${clusterId} has ${nodes.size} nodes`);
  const listed = new Set<string>();
  return r.nodes.map((n, i) => {
    const node = nodes.get(n.hostname.toLowerCase());
    if (node === undefined)
      throw invalid(`nodes[${i}].hostname: cluster ${clusterId} has no node ${n.hostname}`);
    if (listed.has(node.id))
      throw invalid(`nodes[${i}].hostname: ${node.hostname} is listed twice; each node once`);
    listed.add(node.id);
    return {
      id: node.id,
      healthy: n.healthy,
      gpus: n.gpus,
      problem: n.healthy ? null : n.problem || 'unhealthy',
    };
  });
}

export function agentService(
  ctx: ServiceContext,
  front: AgentFront,
  share: AgentShare,
): AgentServiceServer {
  const forward =
    <Req extends { clusterId: string }, Res>(
      method: ForwardedMethod,
      kind: AgentCallKind,
      check?: (r: Req) => void,
    ): handleUnaryCall<Req, Res> =>
    (call, callback) =>
      unary<Req, Res>(ctx, share, method, kind, async (caller, r) => {
        check?.(r);
        return (await ctx.backend.run(method, caller, r)) as Res;
      })(call, callback);
  return {
    attach: unary(ctx, share, 'Attach', 'read', async (caller, r: AttachRequest, known) => {
      checkAttach(r);
      const answer = (await ctx.backend.run('Attach', caller, r)) as AttachResponse;
      await front.attached(known, r.heartbeatIntervalSeconds * 1000);
      return answer;
    }),
    heartbeat: unary(ctx, share, 'Heartbeat', 'heartbeat', async (_caller, r, known) => {
      checkHeartbeat(r);
      const nodes = await front.heartbeat(known, reportedNodes(known, r));
      return { nodes: nodes.map(protoNode) };
    }),
    listSells: forward('ListSells', 'read'),
    publishSell: forward('PublishSell', 'sell'),
    withdrawSell: forward('WithdrawSell', 'sell'),
    listLeases: forward('ListLeases', 'read'),
    reportProvisioned: forward('ReportProvisioned', 'report', checkReportProvisioned),
    reportRevoked: forward('ReportRevoked', 'report'),
    reportFailed: forward('ReportFailed', 'report', checkReportFailed),
  };
}

export async function startAgentServer(
  ctx: ServiceContext,
  o: AgentServerOptions,
): Promise<AgentServer> {
  // The largest valid message, not grpc-js's 4 MiB: a larger one is
  // RESOURCE_EXHAUSTED before it is decoded (agent-limits.ts).
  const server = new Server({ 'grpc.max_receive_message_length': MAX_MESSAGE_BYTES });
  const front = new AgentFront(ctx);
  server.addService(AgentServiceService, agentService(ctx, front, new AgentShare(o.limits)));
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  let port: number;
  try {
    port = await new Promise<number>((resolve, reject) => {
      server.bindAsync(`${host}:${o.port}`, credentials(o.tls), (err, bound) => {
        if (err === null) resolve(bound);
        else reject(err);
      });
    });
  } catch (err) {
    await front.close();
    throw err;
  }
  let closing: Promise<void> | undefined;
  return {
    port,
    front,
    close() {
      closing ??= (async () => {
        // Calls in flight finish, for a while: then they are cut.
        await new Promise<void>((resolve) => {
          const deadline = setTimeout(() => {
            server.forceShutdown();
            resolve();
          }, CLOSE_DEADLINE_MS);
          server.tryShutdown(() => {
            clearTimeout(deadline);
            resolve();
          });
        });
        await front.close();
      })();
      return closing;
    },
  };
}

/**
 * The service over this thread's own market (the embedded PGlite, tests):
 * its backend called directly.
 */
export function inThisThread(
  ctx: ProviderContext,
  o: Partial<Pick<FrontOptions, 'generation' | 'sweepEveryMs' | 'flushEveryMs' | 'clock'>> = {},
): ServiceContext {
  return {
    db: ctx.db,
    directory: ctx.directory,
    backend: new MarketBackend(ctx),
    logger: ctx.logger,
    clock: o.clock ?? (() => ctx.market.clock.now()),
    serving: ctx.serving ?? (() => true),
    generation: o.generation ?? (() => 0),
    ...(o.sweepEveryMs === undefined ? {} : { sweepEveryMs: o.sweepEveryMs }),
    ...(o.flushEveryMs === undefined ? {} : { flushEveryMs: o.flushEveryMs }),
  };
}
