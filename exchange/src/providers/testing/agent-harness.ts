// The agents' gRPC service on loopback over a test exchange (its own
// PostgreSQL database), with a client generated from agent.proto: what the
// providers' database tests call, as an agent would.

/* eslint-disable @typescript-eslint/unbound-method -- call() invokes each client method with the client as `this` */

import { randomBytes } from 'node:crypto';

import { Metadata, credentials } from '@grpc/grpc-js';
import type { CallOptions, ServiceError, status } from '@grpc/grpc-js';
import { AgentServiceClient } from '@gpux/proto';
import type { AttachResponse } from '@gpux/proto';
import { InProcessBus } from '@gpux/shared';

import { Directory } from '../../accounts/directory.js';
import type { Database } from '../../db/database.js';
import { BusPublisher } from '../../events/bus-publisher.js';
import { SecretBox } from '../../leases/secret-box.js';
import { SILENT_LOGGER } from '../../logger.js';
import type { Logger } from '../../logger.js';
import { testExchange } from '../../market/testing/test-exchange.js';
import type {
  Party,
  TestExchange,
  TestExchangeOptions,
} from '../../market/testing/test-exchange.js';
import type { AgentBackend } from '../agent-backend.js';
import { inThisThread, startAgentServer } from '../grpc-server.js';
import type { AgentServer, AgentServerOptions } from '../grpc-server.js';
import type { ProviderContext } from '../provider-context.js';

type Method<Req, Res> = (
  req: Req,
  md: Metadata,
  options: Partial<CallOptions>,
  cb: (err: ServiceError | null, res: Res) => void,
) => unknown;

export type Provider = Party & { readonly clusterId: string };

/** How a call ended that did not answer OK. */
export interface Failed {
  readonly code: status;
  readonly details: string;
  /** The trailing metadata. */
  readonly trailers: Metadata;
}

export interface AgentHarness {
  readonly ex: TestExchange;
  readonly ctx: ProviderContext;
  /** The service (its front sweeps silent nodes and writes heartbeats when asked). */
  readonly server: AgentServer;
  readonly client: AgentServiceClient;
  /** One RPC with `token`; resolves with the response or rejects with the ServiceError. */
  call<Req, Res>(method: Method<Req, Res>, token: string, request: Req): Promise<Res>;
  /** What a call that must fail ended with (the test fails when it answered OK). */
  failure(p: Promise<unknown>): Promise<Failed>;
  /** A provider account of its own with a cluster of `nodes` nodes. */
  provider(nodes: number, gpuType?: string, zone?: string): Promise<Provider>;
  /** Attach the provider's agent (5 s heartbeats, simulated). */
  attach(p: Provider): Promise<AttachResponse>;
  close(): Promise<void>;
}

export interface AgentHarnessOptions {
  /** The server's options beyond host and port (limits). */
  readonly server?: Omit<AgentServerOptions, 'host' | 'port'>;
  readonly logger?: Logger;
  /** The test exchange's own options (REST rate limits). */
  readonly exchange?: TestExchangeOptions;
  /** What the agents' service queries through (a test counts its statements). */
  readonly agentDb?: (db: Database) => Database;
  /** The service's own token cache, as the agents' process has one (a test sets its clock). */
  readonly directory?: (db: Database) => Directory;
  /** What the service hands the market's calls to (a test holds them). */
  readonly backend?: (b: AgentBackend) => AgentBackend;
}

export async function agentHarness(o: AgentHarnessOptions = {}): Promise<AgentHarness> {
  const ex = await testExchange(o.exchange);
  const logger = o.logger ?? SILENT_LOGGER;
  const db = o.agentDb?.(ex.db) ?? ex.db;
  const ctx: ProviderContext = {
    db,
    market: ex.market,
    directory: o.directory?.(db) ?? new Directory(db),
    publisher: new BusPublisher(new InProcessBus()),
    secrets: new SecretBox(randomBytes(32)),
    logger,
    observe: ex.metrics.leaseObserver,
  };
  let server: AgentServer | undefined;
  let client: AgentServiceClient | undefined;
  try {
    // The market's clock; silence and heartbeats' writes only when a test asks.
    const service = inThisThread(ctx, { sweepEveryMs: 0, flushEveryMs: 0 });
    server = await startAgentServer(
      {
        ...service,
        backend: o.backend?.(service.backend) ?? service.backend,
        onCall: ex.metrics.onGrpcCall,
      },
      { ...o.server, host: '127.0.0.1', port: 0 },
    );
    const front = server.front;
    // As the exchange does: the service's kept answers go when leases change.
    ex.market.onLeases((clusters) => front.invalidate(clusters));
    client = new AgentServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
  } catch (err) {
    await server?.close();
    await ex.close();
    throw err;
  }
  const c = client;
  const s = server;

  const call = <Req, Res>(method: Method<Req, Res>, token: string, request: Req): Promise<Res> => {
    const md = new Metadata();
    md.set('authorization', `Bearer ${token}`);
    return new Promise((resolve, reject) => {
      method.call(c, request, md, {}, (err, res) => (err === null ? resolve(res) : reject(err)));
    });
  };

  const h: AgentHarness = {
    ex,
    ctx,
    server: s,
    client: c,
    call,
    async failure(p) {
      try {
        await p;
      } catch (err) {
        const e = err as ServiceError;
        return { code: e.code, details: e.details, trailers: e.metadata };
      }
      throw new Error('the call answered OK');
    },
    async provider(nodes, gpuType = 'h100', zone = 'us-west-1') {
      const p = await ex.party('provider', { scopes: ['provider', 'trade', 'read'] });
      return { ...p, clusterId: await ex.cluster(p, nodes, gpuType, zone) };
    },
    attach: (p) =>
      call(c.attach, p.token, {
        clusterId: p.clusterId,
        heartbeatIntervalSeconds: 5,
        agentVersion: 'test',
        provisioner: 'simulated',
        host: undefined,
      }),
    async close() {
      c.close();
      await s.close();
      await ex.close();
    },
  };
  return h;
}
