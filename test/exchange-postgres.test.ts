// The exchange as a real process on this machine's PostgreSQL (issue 3),
// driven over HTTP only: onboarding, a sell, a market buy that fills, the
// order book, a lease terminated with its refund, then a restart on the same
// database that keeps the resting order and the book; and a start refused on
// a database whose applied migration was edited.

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Not part of the exchange's package (left out of its dist): listed by path in test/tsconfig.json.
import { createDatabase, uniqueDatabaseName } from '../exchange/src/db/testing/admin-database.js';
import type { ScratchDatabase } from '../exchange/src/db/testing/admin-database.js';
import { callApi } from './support/api.js';
import type { ApiAnswer } from './support/api.js';
import { runExchangeToExit, startExchangeProcess } from './support/exchange-process.js';
import type { ExchangeProcess } from './support/exchange-process.js';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';

let database: ScratchDatabase | undefined;
let exchange: ExchangeProcess | undefined;

async function startExchange(): Promise<void> {
  exchange = await startExchangeProcess({
    DATABASE_URL: database?.url ?? '',
    // No NATS here: the in-process bus on purpose.
    GPUX_IN_PROCESS_BUS: '1',
    GPUX_ADMIN_TOKEN: ADMIN_TOKEN,
    GPUX_DEMO: '0',
  });
}

async function stopExchange(): Promise<number | null> {
  const code = (await exchange?.stop('SIGTERM')) ?? null;
  exchange = undefined;
  return code;
}

function call(method: string, path: string, token: string, body?: unknown): Promise<ApiAnswer> {
  return callApi(exchange?.url ?? '', method, path, token, body);
}

beforeAll(async () => {
  database = await createDatabase(uniqueDatabaseName('gpux_e2e'));
  await startExchange();
}, 60_000);

afterAll(async () => {
  await exchange?.stop('SIGKILL');
  await database?.drop();
});

describe('the exchange on PostgreSQL, over HTTP', () => {
  let provider = '';
  let buyer = '';
  let restingSell = '';

  it('onboards a provider with a cluster and a buyer through the admin API (D31)', async () => {
    const p = await call('POST', '/v1/admin/accounts', ADMIN_TOKEN, {
      name: 'farm',
      organization: 'farm-inc',
      scopes: ['trade', 'read', 'leases', 'provider'],
    });
    expect(p.status).toBe(201);
    provider = p.json['token'] as string;
    const b = await call('POST', '/v1/admin/accounts', ADMIN_TOKEN, {
      name: 'lab',
      organization: 'ai-lab',
      scopes: ['trade', 'read', 'leases'],
    });
    buyer = b.json['token'] as string;
    const c = await call('POST', '/v1/admin/clusters', ADMIN_TOKEN, {
      provider_account_id: p.json['account_id'],
      gpu_type: 'h100',
      zone: 'us-east-1',
      nodes: [{ hostname: 'gpu-a' }, { hostname: 'gpu-b' }, { hostname: 'gpu-c' }],
    });
    expect(c.status).toBe(201);
  });

  it('fills a market buy from a resting sell at the ask, and shows the book', async () => {
    const s = await call('POST', '/v1/orders', provider, {
      side: 'sell',
      gpu_type: 'h100',
      zone: 'us-east-1',
      gpu_count: 16,
      duration_hours: 72,
      limit_price: 2.4,
    });
    expect(s.json).toMatchObject({ status: 'pending' });
    const s2 = await call('POST', '/v1/orders', provider, {
      side: 'sell',
      gpu_type: 'h100',
      zone: 'us-east-1',
      gpu_count: 8,
      duration_hours: 72,
      limit_price: 2.6,
    });
    restingSell = s2.json['order_id'] as string;
    const b = await call('POST', '/v1/orders', buyer, {
      side: 'buy',
      gpu_type: 'h100',
      zone: 'us-east-1',
      gpu_count: 8,
      duration_hours: 5,
    });
    expect(b.status).toBe(200);
    expect(b.json).toMatchObject({ status: 'filled', matched_price: 2.4, total_cost: 96 });
    const book = await call('GET', '/v1/orderbook?gpu_type=h100&zone=us-east-1', buyer);
    expect(book.json).toMatchObject({
      market_depth: { best_ask: 2.4, best_bid: null },
      asks: [
        { price: 2.4, gpus: 8, orders: 1 },
        { price: 2.6, gpus: 8, orders: 1 },
      ],
      last_trade: { price: 2.4, gpus: 8 },
      volume_24h: 8,
    });
    const est = await call(
      'GET',
      '/v1/prices/estimate?gpu_type=h100&zone=us-east-1&gpu_count=16&duration_hours=10',
      buyer,
    );
    expect(est.json).toMatchObject({
      estimated_price: 2.5,
      sufficient_liquidity: true,
      cost_breakdown: { compute_cost: 400, platform_fee: 40, total_cost: 440 },
      total_cost: 440,
    });
  });

  it('terminates the lease at once with a refund (D26)', async () => {
    const leases = await call('GET', '/v1/leases', buyer);
    const [lease] = leases.json['leases'] as { lease_id: string }[];
    expect(lease).toBeDefined();
    const t = await call('DELETE', `/v1/leases/${lease!.lease_id}`, buyer);
    expect(t.status).toBe(200);
    expect(t.json).toMatchObject({ status: 'terminated', rate: 2.4 });
    // Terminated within a second of the start: almost all of the 96 comes back.
    expect(t.json['refund_amount']).toBeGreaterThan(95.9);
    const account = await call('GET', '/v1/account', buyer);
    expect(account.json['balance']).toBeCloseTo(
      -(96 + 9.6) + (t.json['refund_amount'] as number),
      2,
    );
  });

  it('restarts on the same database with the same book and orders', async () => {
    const before = await call('GET', '/v1/orderbook?gpu_type=h100&zone=us-east-1', buyer);
    expect(await stopExchange()).toBe(0);
    await startExchange();
    const after = await call('GET', '/v1/orderbook?gpu_type=h100&zone=us-east-1', buyer);
    expect({ ...after.json, timestamp: null }).toEqual({ ...before.json, timestamp: null });
    const o = await call('GET', `/v1/orders/${restingSell}`, provider);
    expect(o.json).toMatchObject({ status: 'pending', limit_price: 2.6 });
    expect(await stopExchange()).toBe(0);
  });
});

describe('the exchange on a database whose applied migration was edited', () => {
  let edited: ScratchDatabase | undefined;
  afterAll(async () => {
    await edited?.drop();
  });

  it('refuses to start, naming the file, without a stack trace', async () => {
    edited = await createDatabase(uniqueDatabaseName('gpux_e2e'));
    // schema_migrations says 0001 ran from a file other than the one shipped.
    const c = new pg.Client({ connectionString: edited.url });
    await c.connect();
    try {
      await c.query(`CREATE TABLE schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now(), checksum text)`);
      await c.query(
        `INSERT INTO schema_migrations (version, name, checksum)
         VALUES (1, 'accounts_and_ledger', repeat('0', 64))`,
      );
    } finally {
      await c.end();
    }
    const { code, stderr } = await runExchangeToExit({
      DATABASE_URL: edited.url,
      GPUX_DEMO: '0',
      GPUX_IN_PROCESS_BUS: '1',
    });
    expect(code, stderr).toBe(1);
    expect(stderr).toContain('0001_accounts_and_ledger.sql');
    expect(stderr).toMatch(/new migration/);
    expect(stderr).not.toMatch(/^\s+at /m);
  });
});
