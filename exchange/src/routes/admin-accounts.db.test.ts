// The operators' API for accounts and tokens (issue 21, docs/api/admin.md):
// lists and reads, credit limits (D3), suspension, tokens (D24), each change
// audit-logged.

import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';

import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { buildApp } from '../app.js';
import { SecretBox } from '../leases/secret-box.js';
import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { Book, Party, Reply, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange();
});

afterAll(async () => {
  await ex?.close();
});

const admin = (method: string, url: string, body?: unknown, token = ADMIN_TOKEN): Promise<Reply> =>
  ex.call(method, url, token, body);

async function auditOf(targetId: string): Promise<Record<string, unknown>[]> {
  const r = await admin('GET', `/v1/admin/audit?target_id=${targetId}&limit=100`);
  expect(r.status).toBe(200);
  return r.json['entries'] as Record<string, unknown>[];
}

/** A resting sell of `provider` in `book`, and a resting limit buy of `buyer` below it. */
async function openOrders(book: Book, provider: Party, buyer: Party): Promise<[string, string]> {
  const sell = await ex.call('POST', '/v1/orders', provider.token, {
    side: 'sell',
    ...book,
    gpu_count: 8,
    duration_hours: 24,
    limit_price: 3,
  });
  expect(sell.status).toBe(200);
  const buy = await ex.call('POST', '/v1/orders', buyer.token, {
    side: 'buy',
    ...book,
    gpu_count: 8,
    duration_hours: 10,
    limit_price: 2,
  });
  expect(buy.json['status']).toBe('pending');
  return [sell.json['order_id'] as string, buy.json['order_id'] as string];
}

describe('GET /v1/admin/accounts and /v1/admin/accounts/{id}', () => {
  it('filters by organization (name or id), scope and status, and pages', async () => {
    const org = `org-${randomBytes(3).toString('hex')}`;
    const a = await ex.account('list-a', { organization: org, scopes: ['read'] });
    const b = await ex.account('list-b', { organization: org, scopes: ['trade', 'read'] });
    const op = await ex.account('list-op', { organization: org, scopes: ['admin'] });

    const byName = await admin('GET', `/v1/admin/accounts?organization=${org}`);
    expect(byName.status).toBe(200);
    expect(byName.json).toMatchObject({ total: 3, limit: 20, offset: 0 });
    const ids = (byName.json['accounts'] as { account_id: string }[]).map((x) => x.account_id);
    // Newest first.
    expect(ids).toEqual([op.accountId, b.accountId, a.accountId]);

    const byId = await admin('GET', `/v1/admin/accounts?organization=${a.organizationId}`);
    expect(byId.json['total']).toBe(3);

    const operators = await admin('GET', `/v1/admin/accounts?organization=${org}&scope=admin`);
    expect(
      (operators.json['accounts'] as { account_id: string }[]).map((x) => x.account_id),
    ).toEqual([op.accountId]);
    const traders = await admin('GET', `/v1/admin/accounts?organization=${org}&scope=trade`);
    expect(traders.json['total']).toBe(1);

    const page = await admin('GET', `/v1/admin/accounts?organization=${org}&limit=2&offset=2`);
    expect(page.json).toMatchObject({ total: 3, limit: 2, offset: 2 });
    expect((page.json['accounts'] as { account_id: string }[])[0]?.account_id).toBe(a.accountId);

    expect(
      (await admin('GET', `/v1/admin/accounts?organization=${org}&status=suspended`)).json['total'],
    ).toBe(0);
  });

  it('refuses an unknown status or scope with the field named', async () => {
    const r = await admin('GET', '/v1/admin/accounts?status=frozen');
    expect(r.status).toBe(400);
    expect(r.json['error']).toMatchObject({ code: 'invalid_request', field: 'status' });
    const s = await admin('GET', '/v1/admin/accounts?scope=root');
    expect(s.json['error']).toMatchObject({ code: 'invalid_request', field: 'scope' });
  });

  it('reads one account with its balance, credit limit, status and scopes', async () => {
    const p = await ex.party('reader', { scopes: ['read', 'trade'], creditLimit: 250 });
    const r = await admin('GET', `/v1/admin/accounts/${p.accountId}`);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      account_id: p.accountId,
      name: p.name,
      organization_id: p.organizationId,
      status: 'active',
      suspended_at: null,
      scopes: ['trade', 'read'],
      live_tokens: 1,
      balance: 0,
      credit_limit: 250,
    });
    const missing = await admin('GET', '/v1/admin/accounts/acc_nope');
    expect(missing.status).toBe(404);
    expect(missing.json['error']).toMatchObject({ code: 'not_found' });
  });

  it('a customer token is 403 forbidden on every admin route', async () => {
    const p = await ex.party('nosy');
    for (const url of [
      '/v1/admin/accounts',
      `/v1/admin/accounts/${p.accountId}`,
      '/v1/admin/audit',
    ]) {
      const r = await ex.call('GET', url, p.token);
      expect(r.status).toBe(403);
      expect(r.json['error']).toMatchObject({ code: 'forbidden' });
    }
  });
});

describe('POST /v1/admin/accounts/{id}/credit-limit (D3)', () => {
  it('changes the limit, takes effect on the next order at once, and is audit-logged', async () => {
    const book = ex.book();
    const provider = await ex.party('cl-provider');
    await ex.cluster(provider, 1, book.gpu_type, book.zone);
    const buyer = await ex.party('cl-buyer', { creditLimit: 10_000 });
    // The buyer's principal is cached now, with the old limit.
    expect((await ex.call('GET', '/v1/account', buyer.token)).status).toBe(200);

    const r = await admin('POST', `/v1/admin/accounts/${buyer.accountId}/credit-limit`, {
      credit_limit: 1,
      reason: 'chargeback under review',
    });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ account_id: buyer.accountId, credit_limit: 1 });

    const order = await ex.call('POST', '/v1/orders', buyer.token, {
      side: 'buy',
      ...book,
      gpu_count: 8,
      duration_hours: 10,
      limit_price: 2,
    });
    expect(order.status).toBe(402);
    expect(order.json['error']).toMatchObject({ code: 'insufficient_funds' });

    const [entry] = await auditOf(buyer.accountId);
    expect(entry).toMatchObject({
      actor: 'admin_token',
      actor_token_id: null,
      action: 'account.credit_limit',
      target_type: 'account',
      target_id: buyer.accountId,
      reason: 'chargeback under review',
      before: { credit_limit: 10_000 },
      after: { credit_limit: 1 },
    });

    const none = await admin('POST', `/v1/admin/accounts/${buyer.accountId}/credit-limit`, {
      credit_limit: null,
      reason: 'review closed',
    });
    expect(none.json['credit_limit']).toBeNull();
  });

  it.each([
    ['no reason', { credit_limit: 5 }, 'reason'],
    ['a blank reason', { credit_limit: 5, reason: '   ' }, 'reason'],
    ['an overlong reason', { credit_limit: 5, reason: 'x'.repeat(1001) }, 'reason'],
    ['a fraction of a cent', { credit_limit: 1.005, reason: 'r' }, 'credit_limit'],
    ['a negative limit', { credit_limit: -1, reason: 'r' }, 'credit_limit'],
  ])('refuses %s with 400 naming the field, and changes nothing', async (_what, body, field) => {
    const p = await ex.party('cl-bad', { creditLimit: 7 });
    const r = await admin('POST', `/v1/admin/accounts/${p.accountId}/credit-limit`, body);
    expect(r.status).toBe(400);
    expect(r.json['error']).toMatchObject({ code: 'invalid_request', field });
    expect((await admin('GET', `/v1/admin/accounts/${p.accountId}`)).json['credit_limit']).toBe(7);
    expect(await auditOf(p.accountId)).toHaveLength(1); // account.create only
  });

  it('is 404 for an unknown account', async () => {
    const r = await admin('POST', '/v1/admin/accounts/acc_nope/credit-limit', {
      credit_limit: 5,
      reason: 'r',
    });
    expect(r.status).toBe(404);
  });
});

describe('suspend and reinstate', () => {
  it('refuses every token at once, cancels open orders through the book, keeps live leases', async () => {
    const book = ex.book();
    const provider = await ex.party('susp-provider');
    await ex.cluster(provider, 2, book.gpu_type, book.zone);
    const buyer = await ex.party('susp-buyer', { creditLimit: 100_000 });
    // A live lease of the buyer's.
    const sell = await ex.call('POST', '/v1/orders', provider.token, {
      side: 'sell',
      ...book,
      gpu_count: 8,
      duration_hours: 48,
      limit_price: 2,
    });
    expect(sell.status).toBe(200);
    const filled = await ex.call('POST', '/v1/orders', buyer.token, {
      side: 'buy',
      ...book,
      gpu_count: 8,
      duration_hours: 10,
    });
    expect(filled.json['status']).toBe('filled');
    const leaseId = filled.json['lease_id'] as string;
    await ex.leaseReady(leaseId, book);
    // Open orders of the buyer: a resting buy below the provider's second sell.
    const [, buyId] = await openOrders(book, provider, buyer);
    const second = await admin('POST', `/v1/admin/accounts/${buyer.accountId}/tokens`, {
      scopes: ['read'],
      reason: 'a second token for the buyer’s CI',
    });
    expect(second.status).toBe(201);
    // Both principals cached.
    expect((await ex.call('GET', '/v1/account', buyer.token)).status).toBe(200);
    expect((await ex.call('GET', '/v1/account', second.json['token'] as string)).status).toBe(200);

    const r = await admin('POST', `/v1/admin/accounts/${buyer.accountId}/suspend`, {
      reason: 'fraud investigation #42',
    });
    expect(r.status).toBe(200);
    expect(r.json['account']).toMatchObject({ account_id: buyer.accountId, status: 'suspended' });
    expect(r.json['cancelled_order_ids']).toEqual([buyId]);

    for (const token of [buyer.token, second.json['token'] as string]) {
      const refused = await ex.call('GET', '/v1/account', token);
      expect(refused.status).toBe(403);
      expect(refused.json['error']).toMatchObject({ code: 'account_suspended' });
    }
    // The book and the database agree: the buy left the book, cancelled.
    expect(ex.market.writer(book.gpu_type, book.zone).view.orders.has(buyId)).toBe(false);
    const [row] = await ex.db.query<{ status: string; cancel_reason: string; book_state: null }>(
      'SELECT status, cancel_reason, book_state FROM orders WHERE id = $1',
      [buyId],
    );
    expect(row).toEqual({
      status: 'cancelled',
      cancel_reason: 'account_suspended',
      book_state: null,
    });
    // Its credit hold went with it (D3).
    const holds = await ex.db.query('SELECT 1 FROM credit_holds WHERE order_id = $1', [buyId]);
    expect(holds).toEqual([]);
    // The live lease is kept.
    const [lease] = await ex.db.query<{ status: string }>(
      'SELECT status FROM leases WHERE id = $1',
      [leaseId],
    );
    expect(lease?.status).toBe('active');
    // The provider's sell is not the buyer's: still open.
    expect(
      [...ex.market.writer(book.gpu_type, book.zone).view.orders.values()].some(
        (o) => o.account_id === provider.accountId,
      ),
    ).toBe(true);

    const [entry] = await auditOf(buyer.accountId);
    expect(entry).toMatchObject({
      action: 'account.suspend',
      reason: 'fraud investigation #42',
      before: { status: 'active', suspended_at: null },
      after: { status: 'suspended' },
    });

    // Suspending again changes nothing and records nothing.
    const again = await admin('POST', `/v1/admin/accounts/${buyer.accountId}/suspend`, {
      reason: 'again',
    });
    expect(again.status).toBe(200);
    expect(again.json['cancelled_order_ids']).toEqual([]);
    expect((await auditOf(buyer.accountId))[0]).toMatchObject({ action: 'account.suspend' });
    expect(
      (await admin('GET', `/v1/admin/audit?target_id=${buyer.accountId}&action=account.suspend`))
        .json['total'],
    ).toBe(1);

    const listed = await admin(
      'GET',
      `/v1/admin/accounts?organization=${buyer.name}&status=suspended`,
    );
    expect(listed.json['total']).toBe(1);

    // Reinstated: its tokens work again at once; cancelled orders stay cancelled.
    const back = await admin('POST', `/v1/admin/accounts/${buyer.accountId}/reinstate`, {
      reason: 'investigation closed',
    });
    expect(back.status).toBe(200);
    expect(back.json).toMatchObject({ status: 'active', suspended_at: null });
    expect((await ex.call('GET', '/v1/account', buyer.token)).status).toBe(200);
    const order = await ex.call('GET', `/v1/orders/${buyId}`, buyer.token);
    expect(order.json).toMatchObject({ status: 'cancelled', cancel_reason: 'account_suspended' });
    expect((await auditOf(buyer.accountId))[0]).toMatchObject({
      action: 'account.reinstate',
      reason: 'investigation closed',
      before: { status: 'suspended' },
      after: { status: 'active', suspended_at: null },
    });
  });

  it('lives in PostgreSQL: another app on the same database refuses the account too', async () => {
    const p = await ex.party('susp-persist');
    expect(
      (await admin('POST', `/v1/admin/accounts/${p.accountId}/suspend`, { reason: 'r' })).status,
    ).toBe(200);
    const other = buildApp(
      { logLevel: 'silent' },
      {
        db: ex.db,
        adminToken: ADMIN_TOKEN,
        market: ex.market,
        secrets: new SecretBox(randomBytes(32)),
      },
    );
    try {
      const r = await other.inject({
        method: 'GET',
        url: '/v1/account',
        headers: { authorization: `Bearer ${p.token}` },
      });
      expect(r.statusCode).toBe(403);
      expect(r.json<{ error: { code: string } }>().error.code).toBe('account_suspended');
    } finally {
      await other.close();
    }
  });

  it('a suspended operator account is refused on the admin API', async () => {
    const op = await ex.party('susp-op', { scopes: ['admin'] });
    expect((await admin('GET', '/v1/admin/accounts?limit=1', undefined, op.token)).status).toBe(
      200,
    );
    await admin('POST', `/v1/admin/accounts/${op.accountId}/suspend`, { reason: 'left the team' });
    const r = await admin('GET', '/v1/admin/accounts?limit=1', undefined, op.token);
    expect(r.status).toBe(403);
    expect(r.json['error']).toMatchObject({ code: 'account_suspended' });
  });

  it('needs a reason and an existing account', async () => {
    const p = await ex.party('susp-bad');
    const r = await admin('POST', `/v1/admin/accounts/${p.accountId}/suspend`, {});
    expect(r.status).toBe(400);
    expect(r.json['error']).toMatchObject({ code: 'invalid_request', field: 'reason' });
    expect((await ex.call('GET', '/v1/account', p.token)).status).toBe(200);
    const missing = await admin('POST', '/v1/admin/accounts/acc_nope/suspend', { reason: 'r' });
    expect(missing.status).toBe(404);
  });
});

describe('tokens', () => {
  it('issues a token shown once, lists tokens without secrets, revokes one at once', async () => {
    const p = await ex.party('tok', { scopes: ['read', 'trade'] });
    const issued = await admin('POST', `/v1/admin/accounts/${p.accountId}/tokens`, {
      scopes: ['read'],
      reason: 'the old token leaked',
    });
    expect(issued.status).toBe(201);
    expect(issued.json).toMatchObject({
      account_id: p.accountId,
      scopes: ['read'],
      revoked_at: null,
    });
    const newToken = issued.json['token'] as string;
    expect(newToken).toMatch(/^gpux_/);
    expect((await ex.call('GET', '/v1/account', newToken)).status).toBe(200);
    // The new token has only the scopes it was given (D24).
    const trade = await ex.call('DELETE', '/v1/orders/ord_none', newToken);
    expect(trade.status).toBe(403);

    const list = await admin('GET', `/v1/admin/accounts/${p.accountId}/tokens`);
    expect(list.status).toBe(200);
    const tokens = list.json['tokens'] as Record<string, unknown>[];
    expect(tokens).toHaveLength(2);
    expect(tokens[0]?.['token_id']).toBe(issued.json['token_id']);
    expect(JSON.stringify(list.json)).not.toContain(newToken);
    expect(JSON.stringify(list.json)).not.toContain(p.token);
    const oldId = tokens[1]?.['token_id'] as string;

    // The old token's principal is cached; the revocation drops it at once.
    expect((await ex.call('GET', '/v1/account', p.token)).status).toBe(200);
    const revoked = await admin(
      'POST',
      `/v1/admin/accounts/${p.accountId}/tokens/${oldId}/revoke`,
      {
        reason: 'leaked in a public repository',
      },
    );
    expect(revoked.status).toBe(200);
    expect(revoked.json['revoked_at']).toEqual(expect.any(String));
    const refused = await ex.call('GET', '/v1/account', p.token);
    expect(refused.status).toBe(401);
    expect((await ex.call('GET', '/v1/account', newToken)).status).toBe(200);

    // Revoking again changes nothing and records nothing.
    const again = await admin('POST', `/v1/admin/accounts/${p.accountId}/tokens/${oldId}/revoke`, {
      reason: 'again',
    });
    expect(again.status).toBe(200);
    expect(again.json['revoked_at']).toBe(revoked.json['revoked_at']);
    const entries = await auditOf(p.accountId);
    expect(entries.map((e) => e['action'])).toEqual([
      'token.revoke',
      'token.issue',
      'account.create',
    ]);
    expect(entries[0]).toMatchObject({
      reason: 'leaked in a public repository',
      before: { token_id: oldId, revoked_at: null },
      after: { token_id: oldId, revoked_at: revoked.json['revoked_at'] },
    });
    expect(entries[1]).toMatchObject({
      after: { token_id: issued.json['token_id'], scopes: ['read'] },
    });
    expect(JSON.stringify(entries)).not.toContain(newToken);
    expect((await admin('GET', `/v1/admin/accounts/${p.accountId}`)).json['live_tokens']).toBe(1);
  });

  it('is 404 for a token of another account, and needs scopes and a reason', async () => {
    const a = await ex.party('tok-a');
    const b = await ex.party('tok-b');
    const [bTok] = (await admin('GET', `/v1/admin/accounts/${b.accountId}/tokens`)).json[
      'tokens'
    ] as { token_id: string }[];
    const r = await admin(
      'POST',
      `/v1/admin/accounts/${a.accountId}/tokens/${bTok?.token_id}/revoke`,
      { reason: 'r' },
    );
    expect(r.status).toBe(404);
    expect((await ex.call('GET', '/v1/account', b.token)).status).toBe(200);
    const noScopes = await admin('POST', `/v1/admin/accounts/${a.accountId}/tokens`, {
      scopes: [],
      reason: 'r',
    });
    expect(noScopes.json['error']).toMatchObject({ code: 'invalid_request', field: 'scopes' });
    const noReason = await admin('POST', `/v1/admin/accounts/${a.accountId}/tokens`, {
      scopes: ['read'],
    });
    expect(noReason.json['error']).toMatchObject({ code: 'invalid_request', field: 'reason' });
    const missing = await admin('GET', '/v1/admin/accounts/acc_nope/tokens');
    expect(missing.status).toBe(404);
  });

  it('a personal operator token is revoked the same way, and names its operator in the log', async () => {
    const op = await ex.party('tok-op', { scopes: ['admin'] });
    const target = await ex.party('tok-target');
    const [opTok] = (await admin('GET', `/v1/admin/accounts/${op.accountId}/tokens`)).json[
      'tokens'
    ] as { token_id: string }[];
    // The operator acts; the audit row names it and its token.
    const r = await admin(
      'POST',
      `/v1/admin/accounts/${target.accountId}/credit-limit`,
      { credit_limit: 3, reason: 'by an operator' },
      op.token,
    );
    expect(r.status).toBe(200);
    const [entry] = await auditOf(target.accountId);
    expect(entry).toMatchObject({ actor: op.accountId, actor_token_id: opTok?.token_id });
    const byActor = await admin('GET', `/v1/admin/audit?actor=${op.accountId}`);
    expect(byActor.json['total']).toBe(1);

    const revoked = await admin(
      'POST',
      `/v1/admin/accounts/${op.accountId}/tokens/${opTok?.token_id}/revoke`,
      { reason: 'operator left' },
    );
    expect(revoked.status).toBe(200);
    const after = await admin('GET', '/v1/admin/accounts?limit=1', undefined, op.token);
    expect(after.status).toBe(401);
  });
});

describe('the request log names the operator', () => {
  it('every line of an admin request, "request completed" too, carries the operator', async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const l of chunk.toString().split('\n'))
          if (l !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
        cb();
      },
    });
    const app = buildApp(
      { logLevel: 'info', logger: pino({ level: 'info' }, sink) },
      {
        db: ex.db,
        adminToken: ADMIN_TOKEN,
        market: ex.market,
        secrets: new SecretBox(randomBytes(32)),
      },
    );
    try {
      const op = await ex.party('log-op', { scopes: ['admin'] });
      const target = await ex.party('log-target');
      const res = await app.inject({
        method: 'POST',
        url: `/v1/admin/accounts/${target.accountId}/suspend`,
        headers: { authorization: `Bearer ${op.token}` },
        payload: { reason: 'logged' },
      });
      expect(res.statusCode).toBe(200);
      const asAdmin = await app.inject({
        method: 'GET',
        url: '/v1/admin/audit?limit=1',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      expect(asAdmin.statusCode).toBe(200);
      const suspended = lines.find((l) => l['msg'] === 'account suspended');
      expect(suspended).toMatchObject({ operator: op.accountId, account_id: target.accountId });
      const completed = lines.filter((l) => l['msg'] === 'request completed');
      expect(completed.map((l) => l['operator'])).toEqual([op.accountId, 'admin_token']);
      expect(completed[0]?.['operator_token_id']).toMatch(/^tok_/);
    } finally {
      await app.close();
    }
  });
});
