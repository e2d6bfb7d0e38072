// Issue 18: the customers' REST path does not wait behind agent traffic.
// The built exchange on PostgreSQL: the agents' gRPC service runs in a
// thread of its own with its own connections, and the calls it hands to the
// market (Attach, the lists, the reports) have two connections of their own
// beside it. The test holds locks two Attaches need, so both of those
// connections wait, and a third agent call waits for one of them. Meanwhile
// REST requests, with a token the exchange has never seen (a lookup in the
// database), are answered; once the locks go, the agent calls are answered
// too.

/* eslint-disable @typescript-eslint/unbound-method -- call() invokes each client method with the client as `this` */

import { Metadata, credentials } from '@grpc/grpc-js';
import type { CallOptions, ServiceError } from '@grpc/grpc-js';
import { AgentServiceClient } from '@gpux/proto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Not part of the exchange's package (left out of its dist): listed by path in test/tsconfig.json.
import { createDatabase, uniqueDatabaseName } from '../exchange/src/db/testing/admin-database.js';
import type { ScratchDatabase } from '../exchange/src/db/testing/admin-database.js';
import { callApi } from './support/api.js';
import type { ApiAnswer } from './support/api.js';
import { startExchangeProcess } from './support/exchange-process.js';
import type { ExchangeProcess } from './support/exchange-process.js';

const ADMIN_TOKEN = 'e2e-admin-token-agent-pool-0123';

let database: ScratchDatabase | undefined;
let exchange: ExchangeProcess | undefined;
let client: AgentServiceClient | undefined;

beforeAll(async () => {
  database = await createDatabase(uniqueDatabaseName('gpux_agent_pool'));
  exchange = await startExchangeProcess({
    DATABASE_URL: database.url,
    // No NATS here: the in-process bus on purpose.
    GPUX_IN_PROCESS_BUS: '1',
    GPUX_ADMIN_TOKEN: ADMIN_TOKEN,
    GPUX_AGENT_DB_CONNECTIONS: '1',
  });
  client = new AgentServiceClient(`127.0.0.1:${exchange.grpcPort}`, credentials.createInsecure());
});

afterAll(async () => {
  client?.close();
  await exchange?.stop('SIGTERM');
  await database?.drop();
});

function rest(method: string, path: string, token: string, body?: unknown): Promise<ApiAnswer> {
  return callApi(exchange?.url ?? '', method, path, token, body);
}

type Method<Req, Res> = (
  req: Req,
  md: Metadata,
  options: Partial<CallOptions>,
  cb: (err: ServiceError | null, res: Res) => void,
) => unknown;

function call<Req, Res>(method: Method<Req, Res>, token: string, request: Req): Promise<Res> {
  const md = new Metadata();
  md.set('authorization', `Bearer ${token}`);
  return new Promise((resolve, reject) => {
    method.call(client, request, md, {}, (err, res) => (err === null ? resolve(res) : reject(err)));
  });
}

async function account(name: string, scopes: string[]): Promise<{ id: string; token: string }> {
  const r = await rest('POST', '/v1/admin/accounts', ADMIN_TOKEN, {
    name,
    organization: name,
    scopes,
  });
  expect(r.status).toBe(201);
  return { id: r.json['account_id'] as string, token: r.json['token'] as string };
}

async function providerCluster(name: string): Promise<{ token: string; clusterId: string }> {
  const p = await account(name, ['provider', 'read']);
  const c = await rest('POST', '/v1/admin/clusters', ADMIN_TOKEN, {
    provider_account_id: p.id,
    gpu_type: 'h100',
    zone: 'us-west-1',
    nodes: [{ hostname: `${name}-node-1` }],
  });
  expect(c.status).toBe(201);
  const clusterId = c.json['cluster_id'] as string;
  await call(client!.attach, p.token, {
    clusterId,
    heartbeatIntervalSeconds: 300,
    agentVersion: 'e2e',
    provisioner: 'simulated',
    host: undefined,
  });
  return { token: p.token, clusterId };
}

describe("the agents' own PostgreSQL connections", () => {
  it('REST answers while every agent connection waits; the agent calls answer once they are free', async () => {
    const a = await providerCluster('pool-a');
    const b = await providerCluster('pool-b');
    const c = await providerCluster('pool-c');
    const attach = (p: { token: string; clusterId: string }) =>
      call(client!.attach, p.token, {
        clusterId: p.clusterId,
        heartbeatIntervalSeconds: 300,
        agentVersion: 'e2e',
        provisioner: 'simulated',
        host: undefined,
      });

    const blocker = new pg.Client({ connectionString: database?.url });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT id FROM clusters WHERE id = ANY($1) FOR UPDATE', [
        [a.clusterId, b.clusterId],
      ]);
      const waiting = [attach(a), attach(b)];
      // Both Attaches hold an agent connection, waiting for the locks.
      for (;;) {
        // The statistics are a snapshot kept for the blocker's transaction: take a new one.
        await blocker.query('SELECT pg_stat_clear_snapshot()');
        const r = await blocker.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = 'gpux-exchange-agents'
              AND wait_event_type = 'Lock'`,
        );
        if (r.rows[0]?.n === 2) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      // Another provider's call needs one of those connections: it waits.
      const queued = call(client!.listLeases, c.token, { clusterId: c.clusterId });

      // The customers' path: a token never seen before, the book, an order.
      const buyer = await account('pool-buyer', ['trade', 'read']);
      expect(
        (await rest('GET', '/v1/orderbook?gpu_type=h100&zone=us-west-1', buyer.token)).status,
      ).toBe(200);
      expect((await rest('GET', '/v1/orders', buyer.token)).status).toBe(200);
      const order = await rest('POST', '/v1/orders', buyer.token, {
        side: 'buy',
        gpu_type: 'h100',
        zone: 'us-west-1',
        gpu_count: 8,
        duration_hours: 1,
        limit_price: 2.5,
      });
      expect(order.status, JSON.stringify(order.json)).toBe(200);

      await blocker.query('ROLLBACK');
      await Promise.all(waiting);
      expect((await queued).leases).toEqual([]);
    } finally {
      await blocker.end();
    }
  });
});
