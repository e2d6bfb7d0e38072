// POST /v1/admin/leases/{id}/fail and /revoke (issue 21, docs/api/admin.md):
// an operator fails a lease stuck provisioning with D25's full refund, or
// force-revokes a live one with D26's refund of the rest; the agent is told
// to revoke (the lease's revoke event), and one audit row is committed with
// the change.

import { HOUR_MS } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ledgerTotal } from '../ledger/ledger.js';
import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { MarketLease, Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  // A lease stays provisioning until an operator acts (no D25 timeout in the way).
  ex = await testExchange({ provisioningTimeoutMs: 1000 * HOUR_MS });
});

afterAll(async () => {
  await ex?.close();
});

const admin = (method: string, url: string, body?: unknown) =>
  ex.call(method, url, ADMIN_TOKEN, body);

async function balance(p: Party): Promise<number> {
  return (await ex.call('GET', '/v1/account', p.token)).json['balance'] as number;
}

/** A provider selling 8 GPUs at $2/GPU-h and a buyer who took 4 hours: the lease, provisioning. */
const lease = (tag: string): Promise<MarketLease> => ex.marketLease(tag);

async function revokeEvents(leaseId: string): Promise<{ reason: string }[]> {
  const rows = await ex.db.query<{ payload: { kind: string; lease_id: string; reason: string } }>(
    'SELECT payload FROM outbox ORDER BY created_ms',
  );
  return rows
    .map((r) => r.payload)
    .filter((p) => p.kind === 'lease.revoke' && p.lease_id === leaseId);
}

async function auditOf(leaseId: string): Promise<Record<string, unknown>[]> {
  const r = await admin('GET', `/v1/admin/audit?target_type=lease&target_id=${leaseId}`);
  expect(r.status).toBe(200);
  return r.json['entries'] as Record<string, unknown>[];
}

describe('an operator fails a lease stuck provisioning (D25)', () => {
  it('fails it with the full refund, tells the agent to revoke, and audit-logs it', async () => {
    const { buyer, provider, leaseId } = await lease('fail');
    // 8 GPUs × $2 × 4 h = $64, and the 10 % fee (D2).
    expect(await balance(buyer)).toBe(-70.4);
    expect(await balance(provider)).toBe(57.6);
    ex.clock.advance(HOUR_MS);

    const r = await admin('POST', `/v1/admin/leases/${leaseId}/fail`, {
      reason: '  provider reports the node is dead  ',
    });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ lease_id: leaseId, status: 'failed', refund_amount: 70.4 });
    // D25: everything comes back; nobody keeps anything of the lease.
    expect(await balance(buyer)).toBe(0);
    expect(await balance(provider)).toBe(0);
    expect(await ledgerTotal(ex.db)).toBe(0);
    expect((await ex.call('GET', `/v1/leases/${leaseId}`, buyer.token)).json['status']).toBe(
      'failed',
    );
    // The same path as the provisioning timeout: a revoke event for the agent.
    expect(await revokeEvents(leaseId)).toEqual([expect.objectContaining({ reason: 'failed' })]);

    const [entry, ...more] = await auditOf(leaseId);
    expect(more).toEqual([]);
    expect(entry).toMatchObject({
      actor: 'admin_token',
      action: 'lease.fail',
      target_type: 'lease',
      target_id: leaseId,
      reason: 'provider reports the node is dead',
      before: { status: 'provisioning', account_id: buyer.accountId, ended_at: null, refund: null },
      after: {
        status: 'failed',
        account_id: buyer.accountId,
        ended_at: new Date(ex.clock.now()).toISOString(),
        refund: 70.4,
      },
    });

    // Failing it again: it has ended.
    const again = await admin('POST', `/v1/admin/leases/${leaseId}/fail`, { reason: 'again' });
    expect(again.status).toBe(409);
    expect(again.json['error']).toMatchObject({ code: 'lease_not_active' });
    expect(await auditOf(leaseId)).toHaveLength(1);
    expect(await balance(buyer)).toBe(0);
  });

  it('refuses an active lease with lease_not_provisioning, changing nothing', async () => {
    const { book, buyer, leaseId } = await lease('fail-active');
    await ex.leaseReady(leaseId, book);
    const r = await admin('POST', `/v1/admin/leases/${leaseId}/fail`, { reason: 'stuck?' });
    expect(r.status).toBe(409);
    expect(r.json['error']).toMatchObject({ code: 'lease_not_provisioning' });
    expect((await ex.call('GET', `/v1/leases/${leaseId}`, buyer.token)).json['status']).toBe(
      'active',
    );
    expect(await revokeEvents(leaseId)).toEqual([]);
    expect(await auditOf(leaseId)).toEqual([]);
    expect(await balance(buyer)).toBe(-70.4);
  });

  it('needs a reason, an existing lease and the admin API', async () => {
    const { buyer, leaseId } = await lease('fail-input');
    for (const body of [{}, { reason: '   ' }, { reason: 'x'.repeat(1001) }]) {
      const r = await admin('POST', `/v1/admin/leases/${leaseId}/fail`, body);
      expect(r.status).toBe(400);
      expect(r.json['error']).toMatchObject({ code: 'invalid_request' });
    }
    const missing = await admin('POST', '/v1/admin/leases/lse_none/fail', { reason: 'why' });
    expect(missing.status).toBe(404);
    const customer = await ex.call('POST', `/v1/admin/leases/${leaseId}/fail`, buyer.token, {
      reason: 'mine',
    });
    expect(customer.status).toBe(403);
    expect((await ex.call('GET', `/v1/leases/${leaseId}`, buyer.token)).json['status']).toBe(
      'provisioning',
    );
    expect(await auditOf(leaseId)).toEqual([]);
  });
});

describe('an operator force-revokes a live lease (D26)', () => {
  it('revokes an active lease with the refund of the rest, as a termination does', async () => {
    const { book, buyer, provider, leaseId } = await lease('revoke');
    await ex.leaseReady(leaseId, book);
    ex.clock.advance(HOUR_MS);

    const r = await admin('POST', `/v1/admin/leases/${leaseId}/revoke`, {
      reason: 'abuse report 4411',
    });
    expect(r.status).toBe(200);
    // D26: 3 h left × $2 × 8 GPUs = $48 back to the buyer (its fee on the lease is kept).
    expect(r.json).toMatchObject({ lease_id: leaseId, status: 'terminated', refund_amount: 48 });
    expect(await balance(buyer)).toBe(-22.4);
    // The provider gives back its 90 % of the refunded time, the platform its 10 % (D2, D26).
    expect(await balance(provider)).toBe(14.4);
    expect(await ledgerTotal(ex.db)).toBe(0);
    expect(await revokeEvents(leaseId)).toEqual([
      expect.objectContaining({ reason: 'terminated' }),
    ]);
    const [entry, ...more] = await auditOf(leaseId);
    expect(more).toEqual([]);
    expect(entry).toMatchObject({
      action: 'lease.revoke',
      reason: 'abuse report 4411',
      before: { status: 'active', refund: null },
      after: { status: 'terminated', refund: 48 },
    });

    const again = await admin('POST', `/v1/admin/leases/${leaseId}/revoke`, { reason: 'again' });
    expect(again.status).toBe(409);
    expect(again.json['error']).toMatchObject({ code: 'lease_not_active' });
  });

  it('revokes a provisioning lease too, and names the operator who did', async () => {
    const { buyer, leaseId } = await lease('revoke-prov');
    const op = await ex.party('revoke-operator', { scopes: ['admin'] });
    const r = await ex.call('POST', `/v1/admin/leases/${leaseId}/revoke`, op.token, {
      reason: 'customer asked support to stop it',
    });
    expect(r.status).toBe(200);
    // Nothing used yet: the whole compute cost back, as a termination (D26), not D25's fee too.
    expect(r.json).toMatchObject({ status: 'terminated', refund_amount: 64 });
    expect(await balance(buyer)).toBe(-6.4);
    const [entry] = await auditOf(leaseId);
    expect(entry).toMatchObject({
      actor: op.accountId,
      action: 'lease.revoke',
      before: { status: 'provisioning' },
      after: { status: 'terminated' },
    });
    expect(entry?.['actor_token_id']).toMatch(/^tok_/);
  });
});
