// One writer per database, fenced (issue 18, docs/ownership.md), with real
// exchange processes on this machine's PostgreSQL: a second process stands
// by and writes nothing; an owner paused past its lease loses the market to
// the standby and, resumed, writes nothing and steps down; a kill -9 under
// load loses no acknowledged order; SIGTERM hands over. The tests assert
// outcomes, never how long anything took.

import { randomBytes } from 'node:crypto';

import { Metadata, credentials, status } from '@grpc/grpc-js';
import { AgentServiceClient } from '@gpux/proto';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';

// Not part of the exchange's package (left out of its dist): listed by path in test/tsconfig.json.
import { createDatabase, uniqueDatabaseName } from '../exchange/src/db/testing/admin-database.js';
import type { ScratchDatabase } from '../exchange/src/db/testing/admin-database.js';
import { callApi } from './support/api.js';
import { startExchangeProcess } from './support/exchange-process.js';
import type { ExchangeProcess } from './support/exchange-process.js';

const ADMIN = 'e2e-admin-token-ownership-0123456789';
/** Every process on one database seals kubeconfigs with the same key (D28). */
const SECRET_KEY = randomBytes(32).toString('base64');

const databases: ScratchDatabase[] = [];
let running: ExchangeProcess[] = [];

afterEach(async () => {
  for (const p of running) {
    if (p.child.signalCode === null && p.child.exitCode === null) {
      p.child.kill('SIGCONT');
      await p.stop('SIGKILL');
    }
  }
  running = [];
});

afterAll(async () => {
  for (const d of databases) await d.drop();
});

async function database(): Promise<string> {
  const d = await createDatabase(uniqueDatabaseName('gpux_own'));
  databases.push(d);
  return d.url;
}

/** An exchange on `url` whose lease is 2 s (a standby takes over soon after the owner stops renewing). */
async function exchange(url: string, instanceId = 'exchange'): Promise<ExchangeProcess> {
  const p = await startExchangeProcess(
    {
      DATABASE_URL: url,
      // No NATS here: the in-process bus on purpose.
      GPUX_IN_PROCESS_BUS: '1',
      GPUX_INSTANCE_ID: instanceId,
      GPUX_ADMIN_TOKEN: ADMIN,
      GPUX_SECRET_KEY: SECRET_KEY,
      GPUX_OWNER_LEASE_SECONDS: '2',
      GPUX_RATE_ORDERS_PER_MINUTE: '100000',
      GPUX_RATE_QUERIES_PER_MINUTE: '100000',
      LOG_LEVEL: 'info',
    },
    { standbyOk: true },
  );
  running.push(p);
  return p;
}

interface Market {
  readonly provider: string;
  readonly buyer: string;
  readonly clusterId: string;
}

/** Through the owner: a provider with an `nodes`-node h100/us-east-1 cluster, and a buyer. */
async function onboard(owner: ExchangeProcess, nodes: number): Promise<Market> {
  const p = await callApi(owner, 'POST', '/v1/admin/accounts', ADMIN, {
    name: 'farm',
    organization: 'farm-inc',
    scopes: ['trade', 'read', 'leases', 'provider'],
  });
  expect(p.status).toBe(201);
  const b = await callApi(owner, 'POST', '/v1/admin/accounts', ADMIN, {
    name: 'lab',
    organization: 'ai-lab',
    scopes: ['trade', 'read', 'leases'],
  });
  expect(b.status).toBe(201);
  const c = await callApi(owner, 'POST', '/v1/admin/clusters', ADMIN, {
    provider_account_id: p.json['account_id'],
    gpu_type: 'h100',
    zone: 'us-east-1',
    nodes: Array.from({ length: nodes }, (_, i) => ({ hostname: `gpu-${i}` })),
  });
  expect(c.status).toBe(201);
  return {
    provider: p.json['token'] as string,
    buyer: b.json['token'] as string,
    clusterId: c.json['cluster_id'] as string,
  };
}

const SELL = { side: 'sell', gpu_type: 'h100', zone: 'us-east-1', duration_hours: 48 };
const BUY = { side: 'buy', gpu_type: 'h100', zone: 'us-east-1', gpu_count: 8, duration_hours: 1 };

async function sell(owner: ExchangeProcess, m: Market, nodes: number): Promise<void> {
  const r = await callApi(owner, 'POST', '/v1/orders', m.provider, {
    ...SELL,
    gpu_count: 8 * nodes,
    limit_price: 2,
    cluster_id: m.clusterId,
  });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
}

/** The answer a process gives to an agent's call, whatever the token (a standby answers before looking). */
function attachCode(p: ExchangeProcess): Promise<status> {
  const client = new AgentServiceClient(`127.0.0.1:${p.grpcPort}`, credentials.createInsecure());
  const md = new Metadata();
  md.set('authorization', 'Bearer not-a-token');
  return new Promise((resolve) => {
    client.attach(
      {
        clusterId: 'cls_x',
        heartbeatIntervalSeconds: 5,
        agentVersion: 't',
        provisioner: 'simulated',
        host: undefined,
      },
      md,
      { deadline: Date.now() + 10_000 },
      (err) => {
        client.close();
        resolve(err === null ? status.OK : err.code);
      },
    );
  });
}

async function countOrders(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const r = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM orders');
    return r.rows[0]?.n ?? -1;
  } finally {
    await client.end();
  }
}

describe('one writer per database (docs/ownership.md)', () => {
  it('two processes started at once: one owns the market, the other stands by, answers 503 and writes nothing', async () => {
    const url = await database();
    const [x, y] = await Promise.all([exchange(url), exchange(url)]);
    const roles = [x.startedAs, y.startedAs].sort();
    expect(roles).toEqual(['owner', 'standby']);
    const owner = x.startedAs === 'owner' ? x : y;
    const standby = owner === x ? y : x;
    // The standby said so, in one line.
    expect(standby.output().match(/^standby on /gm)).toHaveLength(1);

    expect((await callApi(owner, 'GET', '/readyz', '')).json).toEqual({
      status: 'ready',
      role: 'owner',
      phase: 'serving',
      checks: { market: 'ok', database: 'ok', events: 'ok' },
    });
    const notReady = await callApi(standby, 'GET', '/readyz', '');
    expect(notReady.status).toBe(503);
    expect(notReady.json).toMatchObject({ error: { code: 'unavailable', phase: 'standby' } });
    expect(notReady.retryAfter).not.toBeNull();
    expect((await callApi(standby, 'GET', '/healthz', '')).status).toBe(200);
    expect(await attachCode(standby)).toBe(status.UNAVAILABLE);

    const m = await onboard(owner, 1);
    await sell(owner, m, 1);
    // The same market buy at both processes at once: the one node is sold once.
    const [a, b] = await Promise.all([
      callApi(owner, 'POST', '/v1/orders', m.buyer, BUY),
      callApi(standby, 'POST', '/v1/orders', m.buyer, BUY),
    ]);
    expect(a.status).toBe(200);
    expect(a.json['status']).toBe('filled');
    expect(b.status).toBe(503);
    expect((b.json['error'] as { code: string }).code).toBe('unavailable');
    expect(b.retryAfter).not.toBeNull();
    const admin = await callApi(standby, 'GET', '/v1/admin/clusters', ADMIN);
    expect(admin.status).toBe(503);

    // A third process stands by on a role that may only read: any write it
    // tried (a migration, a claim released, a book, a timer) would fail and
    // be logged. It says nothing but its standby line, and a claim the owner
    // has in progress (D23) is still there.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const role = `gpux_ro_${process.pid}_${Date.now() % 100_000}`;
    try {
      await client.query(`CREATE ROLE ${role} LOGIN`);
      await client.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${role}`);
      await client.query(
        `INSERT INTO idempotency_keys (account_id, key, request_hash, created_ms, instance_id)
         SELECT id, 'in-flight', '\\x00', $1, 'exchange' FROM accounts LIMIT 1`,
        [Date.now()],
      );
      const readOnly = new URL(url);
      readOnly.username = role;
      const third = await exchange(readOnly.toString());
      expect(third.startedAs).toBe('standby');
      // Two of its polls and more: still standing by, nothing refused.
      await new Promise((r) => setTimeout(r, 1000));
      expect((await callApi(third, 'GET', '/readyz', '')).status).toBe(503);
      expect(third.output()).not.toMatch(/permission denied|"level":(40|50|60)/);
      const left = await client.query("SELECT 1 FROM idempotency_keys WHERE key = 'in-flight'");
      expect(left.rowCount).toBe(1);
      await third.stop('SIGTERM');
    } finally {
      await client.query(`DROP OWNED BY ${role}`).catch(() => undefined);
      await client.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
      await client.end();
    }
  });

  it('an owner paused past its lease loses the market: the standby takes over and trades; the old owner, resumed, writes nothing and steps down', async () => {
    const url = await database();
    const owner = await exchange(url);
    expect(owner.startedAs).toBe('owner');
    const standby = await exchange(url);
    expect(standby.startedAs).toBe('standby');
    const m = await onboard(owner, 2);
    await sell(owner, m, 2);

    owner.child.kill('SIGSTOP');
    await standby.waitFor(/listening on /);
    const bought = await callApi(standby, 'POST', '/v1/orders', m.buyer, BUY);
    expect(bought.status).toBe(200);
    expect(bought.json['status']).toBe('filled');
    const orders = await countOrders(url);

    owner.child.kill('SIGCONT');
    // Its lease ran out by its own clock: it answers nothing before it knows.
    const stale = await callApi(owner, 'POST', '/v1/orders', m.buyer, BUY);
    expect(stale.status).toBe(503);
    await owner.waitFor(/lost the market/);
    expect((await callApi(owner, 'GET', '/readyz', '')).status).toBe(503);
    expect(await countOrders(url)).toBe(orders);

    // The market goes on at the new owner: the second node is still for sale.
    const second = await callApi(standby, 'POST', '/v1/orders', m.buyer, BUY);
    expect(second.json['status']).toBe('filled');
  });

  it('kill -9 of the owner under load: the standby serves every order the owner acknowledged, and releases its claims in progress', async () => {
    const url = await database();
    // Each process its own GPUX_INSTANCE_ID, as the README advises.
    const owner = await exchange(url, 'exchange-a');
    const standby = await exchange(url, 'exchange-b');
    expect([owner.startedAs, standby.startedAs]).toEqual(['owner', 'standby']);
    const m = await onboard(owner, 40);
    await sell(owner, m, 40);
    // A claim the owner has in progress when it dies (D23): nothing of its
    // request can commit after the takeover, so a retry must be able to run.
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    await db.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, created_ms, instance_id)
       SELECT id, 'dying', '\\x00', $1, 'exchange-a' FROM accounts LIMIT 1`,
      [Date.now()],
    );

    // Four clients alternate market buys (fills) and limit buys (rest) until the owner dies.
    const acknowledged: { id: string; status: string }[] = [];
    let dead = false;
    const client = async (k: number): Promise<void> => {
      for (let i = 0; !dead; i++) {
        const body = (i + k) % 2 === 0 ? BUY : { ...BUY, order_type: 'limit', limit_price: 1.5 };
        try {
          const r = await callApi(owner, 'POST', '/v1/orders', m.buyer, body);
          if (r.status === 200) {
            acknowledged.push({
              id: r.json['order_id'] as string,
              status: r.json['status'] as string,
            });
          }
        } catch {
          return; // the connection died with the process
        }
      }
    };
    const load = [0, 1, 2, 3].map(client);
    while (acknowledged.length < 40) await new Promise((r) => setTimeout(r, 20));
    owner.child.kill('SIGKILL');
    dead = true;
    await Promise.all(load);

    await standby.waitFor(/listening on /);
    const claims = await db.query("SELECT 1 FROM idempotency_keys WHERE key = 'dying'");
    await db.end();
    expect(claims.rowCount).toBe(0);
    expect(acknowledged.length).toBeGreaterThan(0);
    for (const a of acknowledged) {
      const r = await callApi(standby, 'GET', `/v1/orders/${a.id}`, m.buyer);
      expect(r.status, a.id).toBe(200);
      expect(r.json['status'], a.id).toBe(a.status);
    }
  });

  it('SIGTERM of the owner hands the market over to the standby', async () => {
    const url = await database();
    const owner = await exchange(url);
    const standby = await exchange(url);
    expect([owner.startedAs, standby.startedAs]).toEqual(['owner', 'standby']);
    const m = await onboard(owner, 1);
    await sell(owner, m, 1);
    expect(await owner.stop('SIGTERM')).toBe(0);
    await standby.waitFor(/listening on /);
    const bought = await callApi(standby, 'POST', '/v1/orders', m.buyer, BUY);
    expect(bought.json['status']).toBe('filled');
  });
});
