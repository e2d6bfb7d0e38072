// GET /v1/admin/audit (issue 21, docs/api/admin.md): every admin change is
// one row, written with the change; filters and paging; rows never change.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { Reply, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange();
});

afterAll(async () => {
  await ex?.close();
});

const admin = (method: string, url: string, body?: unknown): Promise<Reply> =>
  ex.call(method, url, ADMIN_TOKEN, body);

type Entry = Record<string, unknown>;

describe('GET /v1/admin/audit', () => {
  it('records account and cluster creation, with the reason when one is given', async () => {
    const created = await admin('POST', '/v1/admin/accounts', {
      name: 'audited',
      organization: 'audited-org',
      scopes: ['provider'],
      credit_limit: 12.5,
      reason: 'new provider signed',
    });
    expect(created.status).toBe(201);
    const accountId = created.json['account_id'] as string;
    const token = created.json['token'] as string;
    expect(created.json['token_id']).toMatch(/^tok_/);

    const cluster = await admin('POST', '/v1/admin/clusters', {
      provider_account_id: accountId,
      gpu_type: 'h100',
      zone: 'us-west-1',
      nodes: [{ hostname: 'audit-node-1' }],
    });
    expect(cluster.status).toBe(201);
    const clusterId = cluster.json['cluster_id'] as string;

    const acc = await admin('GET', `/v1/admin/audit?target_type=account&target_id=${accountId}`);
    expect(acc.json).toMatchObject({ total: 1, limit: 20, offset: 0 });
    const [entry] = acc.json['entries'] as Entry[];
    expect(entry).toMatchObject({
      actor: 'admin_token',
      actor_token_id: null,
      action: 'account.create',
      target_type: 'account',
      target_id: accountId,
      reason: 'new provider signed',
      before: null,
      after: {
        name: 'audited',
        organization: 'audited-org',
        scopes: ['provider'],
        credit_limit: 12.5,
        token_id: created.json['token_id'],
      },
    });
    expect(entry?.['audit_id']).toMatch(/^aud_/);
    // Never the secret.
    expect(JSON.stringify(acc.json)).not.toContain(token);

    const cl = await admin('GET', `/v1/admin/audit?action=cluster.create&target_id=${clusterId}`);
    expect(cl.json['entries']).toEqual([
      expect.objectContaining({
        action: 'cluster.create',
        target_type: 'cluster',
        reason: null,
        after: { provider_account_id: accountId, gpu_type: 'h100', zone: 'us-west-1', nodes: 1 },
      }),
    ]);
  });

  it('a change refused writes no row', async () => {
    const before = (await admin('GET', '/v1/admin/audit?limit=1')).json['total'] as number;
    const r = await admin('POST', '/v1/admin/clusters', {
      provider_account_id: 'acc_nobody',
      gpu_type: 'h100',
      zone: 'us-west-1',
      nodes: [{ hostname: 'x-1' }],
    });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect((await admin('GET', '/v1/admin/audit?limit=1')).json['total']).toBe(before);
  });

  it('filters by time and pages newest first', async () => {
    const p = await ex.party('paged');
    for (const limit of [1, 2, 3]) {
      const r = await admin('POST', `/v1/admin/accounts/${p.accountId}/credit-limit`, {
        credit_limit: limit,
        reason: `step ${limit}`,
      });
      expect(r.status).toBe(200);
    }
    const all = await admin('GET', `/v1/admin/audit?target_id=${p.accountId}`);
    const entries = all.json['entries'] as Entry[];
    expect(entries.map((e) => e['reason'])).toEqual(['step 3', 'step 2', 'step 1', null]);
    const page = await admin('GET', `/v1/admin/audit?target_id=${p.accountId}&limit=2&offset=1`);
    expect(page.json).toMatchObject({ total: 4, limit: 2, offset: 1 });
    expect((page.json['entries'] as Entry[]).map((e) => e['reason'])).toEqual(['step 2', 'step 1']);

    const newest = entries[0]?.['at'] as string;
    const since = await admin(
      'GET',
      `/v1/admin/audit?target_id=${p.accountId}&since=${encodeURIComponent(newest)}`,
    );
    expect((since.json['entries'] as Entry[]).map((e) => e['reason'])).toContain('step 3');
    const until = await admin(
      'GET',
      `/v1/admin/audit?target_id=${p.accountId}&until=${encodeURIComponent(entries[3]?.['at'] as string)}`,
    );
    expect(until.json['total']).toBe(0);
    const future = await admin('GET', `/v1/admin/audit?since=2999-01-01T00:00:00Z`);
    expect(future.json['total']).toBe(0);
  });

  it.each([
    ['an unknown action', 'action=account.delete', 'action'],
    ['an unknown target type', 'target_type=planet', 'target_type'],
    ['a time without a zone', 'since=2026-01-01T00:00:00', 'since'],
    ['until before since', 'since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z', 'until'],
    ['an unknown filter', 'who=me', 'who'],
  ])('refuses %s with 400 naming the field', async (_what, query, field) => {
    const r = await admin('GET', `/v1/admin/audit?${query}`);
    expect(r.status).toBe(400);
    expect(r.json['error']).toMatchObject({ code: 'invalid_request', field });
  });

  it('rows are never edited or removed', async () => {
    const [row] = await ex.db.query<{ id: string }>('SELECT id FROM audit_log LIMIT 1');
    expect(row).toBeDefined();
    await expect(
      ex.db.query("UPDATE audit_log SET reason = 'rewritten' WHERE id = $1", [row?.id]),
    ).rejects.toThrow(/append-only/);
    await expect(ex.db.query('DELETE FROM audit_log WHERE id = $1', [row?.id])).rejects.toThrow(
      /append-only/,
    );
  });
});
