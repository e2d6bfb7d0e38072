import { createHash, randomBytes } from 'node:crypto';

import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { buildApp } from '../app.js';
import { SecretBox } from '../leases/secret-box.js';
import { Market } from '../market/market.js';
import { migrate } from '../db/migrate.js';
import { freshPostgres } from '../db/testing/fresh-database.js';
import type { FreshDatabase } from '../db/testing/fresh-database.js';
import { fillPostings } from '../ledger/postings.js';
import { postTransaction as post } from '../ledger/testing/post-transaction.js';
import { guardSerialization } from '../http/testing/serialization-guard.js';
import type { SerializationGuard } from '../http/testing/serialization-guard.js';

const ADMIN = 'test-admin-token-0123456789';
let fresh: FreshDatabase;
let market: Market;
let app: FastifyInstance;

let guard: SerializationGuard;

beforeAll(async () => {
  fresh = await freshPostgres();
  await migrate(fresh.db);
  market = await Market.open(fresh.db, { tickIntervalMs: 0 });
  app = buildApp(
    { logLevel: 'silent' },
    { db: fresh.db, adminToken: ADMIN, market, secrets: new SecretBox(randomBytes(32)) },
  );
  // Every answer must serialize to exactly its view (http/testing/serialization-guard.ts).
  guard = guardSerialization(app);
});

afterAll(async () => {
  expect(guard.mismatches).toEqual([]);
  await app.close();
  await fresh.drop();
});

async function createAccount(
  body: Record<string, unknown>,
  token = ADMIN,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/admin/accounts',
    headers: { authorization: `Bearer ${token}` },
    payload: body,
  });
  return { status: res.statusCode, json: res.json<Record<string, unknown>>() };
}

async function getAccount(
  token: string | undefined,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await app.inject({
    method: 'GET',
    url: '/v1/account',
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
  return { status: res.statusCode, json: res.json<Record<string, unknown>>() };
}

describe('POST /v1/admin/accounts (D31)', () => {
  it('creates an account in a new organization and shows its token once', async () => {
    const r = await createAccount({
      name: 'alice',
      organization: 'acme',
      scopes: ['trade', 'read'],
    });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ organization: 'acme', scopes: ['trade', 'read'] });
    expect(r.json['account_id']).toMatch(/^acc_/);
    expect(r.json['organization_id']).toMatch(/^org_/);
    expect(r.json['token']).toMatch(/^gpux_[A-Za-z0-9_-]{43}$/);
  });

  it('D24: stores only the hash of the token', async () => {
    const r = await createAccount({ name: 'hash', organization: 'acme', scopes: ['read'] });
    const token = r.json['token'] as string;
    const hash = createHash('sha256').update(token).digest();
    const rows = await fresh.db.query<{ token_hash: Buffer; n: number }>(
      'SELECT token_hash FROM api_tokens WHERE account_id = $1',
      [r.json['account_id']],
    );
    expect(rows).toHaveLength(1);
    expect(Buffer.compare(rows[0]!.token_hash, hash)).toBe(0);
    const dump = JSON.stringify(await fresh.db.query('SELECT * FROM api_tokens'));
    expect(dump).not.toContain(token);
  });

  it('D17 / D31: a second account naming the same organization joins it', async () => {
    const a = await createAccount({ name: 'a1', organization: 'shared-org', scopes: ['read'] });
    const b = await createAccount({ name: 'a2', organization: 'shared-org', scopes: ['read'] });
    expect(b.json['organization_id']).toBe(a.json['organization_id']);
    expect(b.json['account_id']).not.toBe(a.json['account_id']);
  });

  it('D31: without the admin token it is 401 unauthorized', async () => {
    const wrong = await createAccount(
      { name: 'x', organization: 'y', scopes: ['read'] },
      'not-the-admin',
    );
    expect(wrong.status).toBe(401);
    expect(wrong.json).toMatchObject({ data: null, error: { code: 'unauthorized' } });
    const res = await app.inject({
      method: 'POST',
      url: '/v1/admin/accounts',
      payload: { name: 'x', organization: 'y', scopes: ['read'] },
    });
    expect(res.statusCode).toBe(401);
  });

  it.each([
    ['an unknown scope', { name: 'x', organization: 'y', scopes: ['root'] }],
    ['no scopes', { name: 'x', organization: 'y', scopes: [] }],
    ['a missing organization', { name: 'x', scopes: ['read'] }],
    ['an unknown field', { name: 'x', organization: 'y', scopes: ['read'], admin: true }],
    ['an empty name', { name: '', organization: 'y', scopes: ['read'] }],
    ['an overlong name', { name: 'n'.repeat(201), organization: 'y', scopes: ['read'] }],
    [
      'a credit limit in fractions of a cent',
      { name: 'x', organization: 'y', scopes: ['read'], credit_limit: 1.005 },
    ],
    [
      'a credit limit sent as a string',
      { name: 'x', organization: 'y', scopes: ['read'], credit_limit: '50' },
    ],
    ['a name sent as a number', { name: 12, organization: 'y', scopes: ['read'] }],
    ['scopes sent as a string', { name: 'x', organization: 'y', scopes: 'read' }],
    [
      'a negative credit limit',
      { name: 'x', organization: 'y', scopes: ['read'], credit_limit: -5 },
    ],
  ])('refuses %s with 400 invalid_request', async (_what, body) => {
    const r = await createAccount(body);
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ data: null, error: { code: 'invalid_request' } });
  });
});

describe('D24: the admin API and account tokens', () => {
  it('a valid customer token on an admin route is 403 forbidden (valid token, missing scope), not 401', async () => {
    const customer = await createAccount({
      name: 'not-an-operator',
      organization: 'customers',
      scopes: ['trade', 'read', 'leases', 'provider'],
    });
    const token = customer.json['token'] as string;
    const r = await createAccount({ name: 'x', organization: 'y', scopes: ['read'] }, token);
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ data: null, error: { code: 'forbidden' } });
    const list = await app.inject({
      method: 'GET',
      url: '/v1/admin/clusters',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(list.statusCode).toBe(403);
    // Checked before the body: the forbidden caller learns nothing about the schema.
    expect((await createAccount({ nonsense: true }, token)).status).toBe(403);
    // The admin API is not rate limited (D18), whoever calls it.
    expect(list.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('an account token with the admin scope may use the admin API', async () => {
    const operator = await createAccount({
      name: 'operator',
      organization: 'operators',
      scopes: ['admin'],
    });
    const r = await createAccount(
      { name: 'made-by-operator', organization: 'ops-made', scopes: ['read'] },
      operator.json['token'] as string,
    );
    expect(r.status).toBe(201);
  });
});

describe('GET /v1/account (D33) and authentication (D24)', () => {
  it('returns the caller account with its ledger balance and credit limit', async () => {
    const buyer = await createAccount({
      name: 'buyer',
      organization: 'buyers',
      scopes: ['read', 'trade'],
      credit_limit: 5000,
    });
    const seller = await createAccount({
      name: 'seller',
      organization: 'sellers',
      scopes: ['read'],
    });
    // A fill worth $100 (D2): the buyer owes $110, the seller is owed $90.
    await fresh.db.transaction((tx) =>
      post(tx, {
        id: 'txn_test_fill',
        kind: 'lease_charge',
        postings: fillPostings(
          buyer.json['account_id'] as string,
          seller.json['account_id'] as string,
          10_000,
        ),
      }),
    );
    const b = await getAccount(buyer.json['token'] as string);
    expect(b.status).toBe(200);
    expect(b.json).toMatchObject({
      account_id: buyer.json['account_id'],
      name: 'buyer',
      organization: 'buyers',
      balance: -110,
      credit_limit: 5000,
    });
    const s = await getAccount(seller.json['token'] as string);
    expect(s.json).toMatchObject({ balance: 90, credit_limit: null });
  });

  it('401 without a token, or with an unknown one', async () => {
    expect((await getAccount(undefined)).json).toMatchObject({ error: { code: 'unauthorized' } });
    const unknown = await getAccount('gpux_unknown');
    expect(unknown.status).toBe(401);
    expect(unknown.json).toMatchObject({ data: null, error: { code: 'unauthorized' } });
  });

  it('403 when the token lacks the read scope', async () => {
    const trader = await createAccount({ name: 'trader', organization: 'acme', scopes: ['trade'] });
    const r = await getAccount(trader.json['token'] as string);
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ data: null, error: { code: 'forbidden' } });
  });

  it('the admin token is no account token', async () => {
    expect((await getAccount(ADMIN)).status).toBe(401);
  });
});

describe('GET /v1/account/transactions (D33, D21)', () => {
  it('pages the caller ledger rows newest first, with total, limit and offset', async () => {
    const buyer = await createAccount({ name: 'pager', organization: 'pagers', scopes: ['read'] });
    const seller = await createAccount({
      name: 'p-seller',
      organization: 'p-sellers',
      scopes: ['read'],
    });
    const buyerId = buyer.json['account_id'] as string;
    const sellerId = seller.json['account_id'] as string;
    for (let i = 1; i <= 3; i++) {
      await fresh.db.transaction((tx) =>
        post(tx, {
          id: `txn_page_${i}`,
          kind: 'lease_charge',
          orderId: `ord_${i}`,
          postings: fillPostings(buyerId, sellerId, i * 1000),
        }),
      );
    }
    const res = await app.inject({
      method: 'GET',
      url: '/v1/account/transactions?limit=2&offset=1',
      headers: { authorization: `Bearer ${buyer.json['token'] as string}` },
    });
    expect(res.statusCode).toBe(200);
    const body = res.json<{
      transactions: Record<string, unknown>[];
      total: number;
      limit: number;
      offset: number;
    }>();
    // 3 fills × (charge, fee) = 6 rows; newest first: fill 3's fee, then fill 3's charge, ...
    expect(body).toMatchObject({ total: 6, limit: 2, offset: 1 });
    expect(body.transactions).toEqual([
      expect.objectContaining({
        transaction_id: 'txn_page_3',
        kind: 'buyer_charge',
        amount: -30,
        order_id: 'ord_3',
      }),
      expect.objectContaining({ transaction_id: 'txn_page_2', kind: 'buyer_fee', amount: -2 }),
    ]);
  });

  it.each(['limit=101', 'limit=0', 'offset=-1', 'limit=abc', 'limit=1.5', 'page=2'])(
    'D21: %s is invalid_request, not clamped',
    async (query) => {
      const acct = await createAccount({ name: 'q', organization: 'q', scopes: ['read'] });
      const res = await app.inject({
        method: 'GET',
        url: `/v1/account/transactions?${query}`,
        headers: { authorization: `Bearer ${acct.json['token'] as string}` },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ data: null, error: { code: 'invalid_request' } });
    },
  );

  it('D24: authentication comes before validation: a bad query without a token is 401', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/account/transactions?limit=999' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: { code: 'unauthorized' } });
  });
});

describe('D18: rate limits per account, headers on every response', () => {
  it('counts queries per account, answers 429 with Retry-After past the limit', async () => {
    const limited = buildApp(
      { logLevel: 'silent', rateLimits: { query: 2, create: 1, cancel: 1 } },
      { db: fresh.db, adminToken: ADMIN, market, secrets: new SecretBox(randomBytes(32)) },
    );
    try {
      const a = await createAccount({ name: 'rl-a', organization: 'rl', scopes: ['read'] });
      const b = await createAccount({ name: 'rl-b', organization: 'rl-b', scopes: ['read'] });
      const get = (token: string): Promise<LightMyRequestResponse> =>
        limited.inject({
          method: 'GET',
          url: '/v1/account',
          headers: { authorization: `Bearer ${token}` },
        });
      const first = await get(a.json['token'] as string);
      expect(first.statusCode).toBe(200);
      expect(first.headers).toMatchObject({
        'x-ratelimit-limit': '2',
        'x-ratelimit-remaining': '1',
        'x-ratelimit-reset': '0',
      });
      expect((await get(a.json['token'] as string)).headers['x-ratelimit-remaining']).toBe('0');
      const third = await get(a.json['token'] as string);
      expect(third.statusCode).toBe(429);
      expect(third.json()).toMatchObject({ data: null, error: { code: 'rate_limited' } });
      expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
      expect(third.headers['x-ratelimit-remaining']).toBe('0');
      // Another account has its own budget.
      expect((await get(b.json['token'] as string)).statusCode).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
