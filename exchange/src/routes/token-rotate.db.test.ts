// POST /v1/account/token/rotate (issue 24): the new token works with the old
// one's scopes, and the old one is refused from the very next request, even
// though this exchange had its principal cached.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { testExchange } from '../market/testing/test-exchange.js';
import type { TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange();
});

afterAll(async () => {
  await ex?.close();
});

describe('token rotation (issue 24)', () => {
  it('replaces the calling token: the new one works, the old one is 401 at once', async () => {
    const p = await ex.party('rotator');
    // Read once, so the directory keeps the old token's principal.
    expect((await ex.call('GET', '/v1/account', p.token)).status).toBe(200);
    const r = await ex.call('POST', '/v1/account/token/rotate', p.token, undefined, {
      'idempotency-key': 'rotate-1',
    });
    expect(r.status).toBe(201);
    const fresh = r.json['token'] as string;
    expect(fresh).not.toBe(p.token);
    expect(r.json).toMatchObject({ replaced_token_id: expect.stringMatching(/^tok_/) as string });
    const old = await ex.call('GET', '/v1/account', p.token);
    expect(old.status).toBe(401);
    expect(old.json).toMatchObject({ error: { code: 'unauthorized' } });
    const now = await ex.call('GET', '/v1/account', fresh);
    expect(now.status).toBe(200);
    expect(now.json['account_id']).toBe(p.accountId);
    // The same scopes: the new token still trades.
    const order = await ex.call('POST', '/v1/orders', fresh, {
      side: 'buy',
      gpu_type: 'h100',
      zone: 'us-west-1',
      gpu_count: 8,
      duration_hours: 2,
      limit_price: 1,
    });
    expect(order.status).toBe(200);
    // The secret is not kept as an idempotent answer, and the old token cannot replay it.
    const kept = await ex.db.query('SELECT 1 FROM idempotency_keys WHERE key = $1', ['rotate-1']);
    expect(kept).toHaveLength(0);
    const replay = await ex.call('POST', '/v1/account/token/rotate', p.token, undefined, {
      'idempotency-key': 'rotate-1',
    });
    expect(replay.status).toBe(401);
    // Rotating the new token again works; the one before it is gone too.
    const again = await ex.call('POST', '/v1/account/token/rotate', fresh);
    expect(again.status).toBe(201);
    expect((await ex.call('GET', '/v1/account', fresh)).status).toBe(401);
  });
});
