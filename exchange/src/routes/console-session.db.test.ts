// The console's sign-in (issue 23, docs/console.md): an operator token in a
// body becomes an HttpOnly, SameSite=Strict session cookie backed by a
// console_sessions row; the cookie authenticates the admin API, changes need
// the session's X-CSRF-Token, and a revoked token or suspended account ends
// the session.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange();
});

afterAll(async () => {
  await ex?.close();
});

interface Answer {
  readonly status: number;
  readonly json: Record<string, unknown>;
  readonly cookie: string | undefined;
  readonly rateLimit: unknown;
}

/** A request with a cookie and headers, no Authorization. */
async function send(
  method: 'GET' | 'POST' | 'DELETE',
  url: string,
  o: { cookie?: string; csrf?: string; body?: unknown; on?: TestExchange } = {},
): Promise<Answer> {
  const res = await (o.on ?? ex).app.inject({
    method,
    url,
    headers: {
      ...(o.cookie === undefined ? {} : { cookie: o.cookie }),
      ...(o.csrf === undefined ? {} : { 'x-csrf-token': o.csrf }),
    },
    ...(o.body === undefined ? {} : { payload: o.body as Record<string, unknown> }),
  });
  const set = res.headers['set-cookie'];
  return {
    status: res.statusCode,
    json: res.json<Record<string, unknown>>(),
    cookie: Array.isArray(set) ? set[0] : set,
    rateLimit: res.headers['x-ratelimit-limit'],
  };
}

async function signIn(
  token: string,
  on: TestExchange = ex,
): Promise<{ cookie: string; csrf: string; set: string }> {
  const r = await send('POST', '/v1/console/session', { body: { token }, on });
  expect(r.status, JSON.stringify(r.json)).toBe(201);
  const set = r.cookie ?? '';
  return { cookie: set.split(';')[0] ?? '', csrf: r.json['csrf_token'] as string, set };
}

describe('the console session', () => {
  it('turns the admin token into an HttpOnly, SameSite=Strict cookie that reads the admin API', async () => {
    const s = await signIn(ADMIN_TOKEN);
    expect(s.set).toMatch(
      /^gpux_console=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=43200; HttpOnly; SameSite=Strict$/,
    );
    // Only a hash of the id is kept.
    const id = s.cookie.split('=')[1] ?? '';
    const rows = await ex.db.query<{ hashed: boolean; plain: boolean }>(
      `SELECT id_hash = sha256(convert_to($1, 'UTF8')) AS hashed,
              position($1 IN row_to_json(s)::text) > 0 AS plain
         FROM console_sessions s WHERE id_hash = sha256(convert_to($1, 'UTF8'))`,
      [id],
    );
    expect(rows).toEqual([{ hashed: true, plain: false }]);

    const who = await send('GET', '/v1/console/session', { cookie: s.cookie });
    expect(who.status).toBe(200);
    expect(who.json).toMatchObject({ actor: 'admin_token', token_id: null, csrf_token: s.csrf });
    const accounts = await send('GET', '/v1/admin/accounts', { cookie: s.cookie });
    expect(accounts.status).toBe(200);
  });

  it('needs the session’s CSRF token on every change, and records the operator', async () => {
    const s = await signIn(ADMIN_TOKEN);
    const p = await ex.party('csrf-target');
    const url = `/v1/admin/accounts/${p.accountId}/credit-limit`;
    const body = { credit_limit: 500, reason: 'console test' };
    const none = await send('POST', url, { cookie: s.cookie, body });
    expect(none.status).toBe(403);
    expect(none.json['error']).toMatchObject({ code: 'csrf_token_invalid' });
    const wrong = await send('POST', url, { cookie: s.cookie, csrf: 'x'.repeat(43), body });
    expect(wrong.json['error']).toMatchObject({ code: 'csrf_token_invalid' });
    const ok = await send('POST', url, { cookie: s.cookie, csrf: s.csrf, body });
    expect(ok.status, JSON.stringify(ok.json)).toBe(200);
    const audit = await ex.call('GET', `/v1/admin/audit?target_id=${p.accountId}`, ADMIN_TOKEN);
    expect(audit.json['entries']).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ action: 'account.credit_limit', actor: 'admin_token' }),
      ]),
    );
  });

  it('refuses what is not an operator’s token, and a token in the URL', async () => {
    const customer = await ex.party('console-customer');
    const r = await send('POST', '/v1/console/session', { body: { token: customer.token } });
    expect(r.status).toBe(403);
    expect(r.json['error']).toMatchObject({ code: 'forbidden' });
    const unknown = await send('POST', '/v1/console/session', { body: { token: 'gpux_nope' } });
    expect(unknown.status).toBe(401);
    expect(unknown.cookie).toBeUndefined();
    const inUrl = await send('POST', `/v1/console/session?token=${ADMIN_TOKEN}`, { body: {} });
    expect(inUrl.status).toBe(400);
    expect(inUrl.cookie).toBeUndefined();
    const noCookie = await send('GET', '/v1/admin/accounts');
    expect(noCookie.status).toBe(401);
    const forged = await send('GET', '/v1/admin/accounts', {
      cookie: `gpux_console=${'A'.repeat(43)}`,
    });
    expect(forged.status).toBe(401);
  });

  it('ends when the operator’s token is revoked or its account suspended', async () => {
    const op = await ex.party('console-operator', { scopes: ['admin'] });
    const s = await signIn(op.token);
    const who = await send('GET', '/v1/console/session', { cookie: s.cookie });
    expect(who.json).toMatchObject({ actor: op.accountId });
    const suspended = await ex.call(
      'POST',
      `/v1/admin/accounts/${op.accountId}/suspend`,
      ADMIN_TOKEN,
      {
        reason: 'console test',
      },
    );
    expect(suspended.status).toBe(200);
    expect((await send('GET', '/v1/admin/accounts', { cookie: s.cookie })).status).toBe(401);
    expect((await send('GET', '/v1/console/session', { cookie: s.cookie })).status).toBe(401);

    const op2 = await ex.party('console-operator2', { scopes: ['admin'] });
    const s2 = await signIn(op2.token);
    const [token] = await ex.db.query<{ id: string }>(
      'SELECT id FROM api_tokens WHERE account_id = $1',
      [op2.accountId],
    );
    const revoke = await ex.call(
      'POST',
      `/v1/admin/accounts/${op2.accountId}/tokens/${token?.id ?? ''}/revoke`,
      ADMIN_TOKEN,
      { reason: 'console test' },
    );
    expect(revoke.status).toBe(200);
    expect((await send('GET', '/v1/admin/accounts', { cookie: s2.cookie })).status).toBe(401);
  });

  it('reads the market as any client does, and trades nothing', async () => {
    const s = await signIn(ADMIN_TOKEN);
    const book = await send('GET', '/v1/orderbook?gpu_type=h100&zone=us-west-1', {
      cookie: s.cookie,
    });
    expect(book.status).toBe(200);
    const candles = await send('GET', '/v1/candles?gpu_type=h100&zone=us-west-1&granularity=60', {
      cookie: s.cookie,
    });
    expect(candles.status).toBe(200);
    const order = await send('POST', '/v1/orders', {
      cookie: s.cookie,
      csrf: s.csrf,
      body: { side: 'buy', gpu_type: 'h100', zone: 'us-west-1', gpu_count: 8, duration_hours: 1 },
    });
    expect(order.status).toBe(401);
  });

  it("reads the market past any account's rate limit: counted against no account (D18)", async () => {
    // A second exchange whose accounts may make 3 queries a minute.
    const limited = await testExchange({ rateLimits: { query: 3, create: 10, cancel: 20 } });
    try {
      const { cookie } = await signIn(ADMIN_TOKEN, limited);
      for (let i = 0; i < 6; i += 1) {
        const path = i % 2 === 0 ? '/v1/orderbook' : '/v1/trades';
        const r = await send('GET', `${path}?gpu_type=h100&zone=us-west-1`, {
          cookie,
          on: limited,
        });
        expect(r.status, JSON.stringify(r.json)).toBe(200);
        expect(r.rateLimit).toBeUndefined();
      }
      // The limit is in force for an account's token all the same.
      const reader = await limited.account('reader', { scopes: ['read'] });
      const statuses: number[] = [];
      for (let i = 0; i < 4; i += 1) {
        const r = await limited.call(
          'GET',
          '/v1/orderbook?gpu_type=h100&zone=us-west-1',
          reader.token,
        );
        statuses.push(r.status);
      }
      expect(statuses).toEqual([200, 200, 200, 429]);
    } finally {
      await limited.close();
    }
  });

  it('signs out with the CSRF token, and the cookie no longer works', async () => {
    const s = await signIn(ADMIN_TOKEN);
    const bad = await send('DELETE', '/v1/console/session', { cookie: s.cookie });
    expect(bad.json['error']).toMatchObject({ code: 'csrf_token_invalid' });
    const out = await send('DELETE', '/v1/console/session', { cookie: s.cookie, csrf: s.csrf });
    expect(out.status).toBe(200);
    expect(out.cookie).toMatch(/^gpux_console=; Path=\/; Max-Age=0; HttpOnly; SameSite=Strict/);
    expect((await send('GET', '/v1/admin/accounts', { cookie: s.cookie })).status).toBe(401);
  });
});
