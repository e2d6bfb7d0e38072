// The operators' money calls (issue 21, docs/api/admin.md): any account's
// ledger, adjustments against the platform's account, payouts of a
// provider's earnings. Each posting is balanced (D3: the ledger sums to
// zero) and audit-logged in its transaction.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  PAYOUTS_ACCOUNT_ID,
  PLATFORM_ACCOUNT_ID,
  balanceOf,
  ledgerTotal,
} from '../ledger/ledger.js';
import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange();
});

afterAll(async () => {
  await ex?.close();
});

const admin = (method: string, url: string, body?: unknown) =>
  ex.call(method, url, ADMIN_TOKEN, body);

async function balance(p: Party): Promise<number> {
  return (await ex.call('GET', '/v1/account', p.token)).json['balance'] as number;
}

async function auditOf(accountId: string): Promise<Record<string, unknown>[]> {
  const r = await admin('GET', `/v1/admin/audit?target_type=account&target_id=${accountId}`);
  return r.json['entries'] as Record<string, unknown>[];
}

/** A provider that earned $57.60: 8 GPUs × $2 × 4 h sold, less the 10 % fee (D2). */
async function earningProvider(tag: string): Promise<{ provider: Party; buyer: Party }> {
  const book = ex.book();
  const provider = await ex.party(`${tag}-provider`, { scopes: ['trade', 'read', 'provider'] });
  await ex.cluster(provider, 1, book.gpu_type, book.zone);
  const buyer = await ex.party(`${tag}-buyer`);
  await ex.call('POST', '/v1/orders', provider.token, {
    side: 'sell',
    ...book,
    gpu_count: 8,
    duration_hours: 24,
    limit_price: 2,
  });
  const buy = await ex.call('POST', '/v1/orders', buyer.token, {
    side: 'buy',
    ...book,
    gpu_count: 8,
    duration_hours: 4,
  });
  expect(buy.json['status']).toBe('filled');
  expect(await balance(provider)).toBe(57.6);
  return { provider, buyer };
}

describe('an operator reads any account’s ledger', () => {
  it('pages it as the owner’s /v1/account/transactions does', async () => {
    const { buyer } = await earningProvider('ledger');
    const own = await ex.call('GET', '/v1/account/transactions?limit=1&offset=1', buyer.token);
    const r = await admin(
      'GET',
      `/v1/admin/accounts/${buyer.accountId}/transactions?limit=1&offset=1`,
    );
    expect(r.status).toBe(200);
    expect(r.json).toEqual(own.json);
    expect(r.json).toMatchObject({ total: 2, limit: 1, offset: 1 });
    expect((await admin('GET', '/v1/admin/accounts/acc_none/transactions')).status).toBe(404);
    expect(
      (await ex.call('GET', `/v1/admin/accounts/${buyer.accountId}/transactions`, buyer.token))
        .status,
    ).toBe(403);
  });
});

describe('an operator adjusts an account against the platform’s account', () => {
  it('credits an outage, balanced, in the customer’s ledger, audit-logged', async () => {
    const customer = await ex.party('adjust');
    const platformBefore = await balanceOf(ex.db, PLATFORM_ACCOUNT_ID);
    const r = await admin('POST', `/v1/admin/accounts/${customer.accountId}/adjustments`, {
      amount: 25.5,
      reason: 'outage credit, incident 77',
    });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({
      transaction_kind: 'adjustment',
      account_id: customer.accountId,
      amount: 25.5,
      balance_before: 0,
      balance: 25.5,
    });
    const txn = r.json['transaction_id'] as string;
    expect(await balance(customer)).toBe(25.5);
    expect(await balanceOf(ex.db, PLATFORM_ACCOUNT_ID)).toBe(platformBefore - 2550);
    expect(await ledgerTotal(ex.db)).toBe(0);
    const own = await ex.call('GET', '/v1/account/transactions', customer.token);
    expect(own.json['transactions']).toEqual([
      expect.objectContaining({
        transaction_id: txn,
        transaction_kind: 'adjustment',
        kind: 'adjustment',
        amount: 25.5,
        order_id: null,
        lease_id: null,
      }),
    ]);
    const [entry] = await auditOf(customer.accountId);
    expect(entry).toMatchObject({
      actor: 'admin_token',
      action: 'account.adjustment',
      reason: 'outage credit, incident 77',
      before: { balance: 0 },
      after: { balance: 25.5, transaction_id: txn, amount: 25.5 },
    });

    // A correction debits it.
    const debit = await admin('POST', `/v1/admin/accounts/${customer.accountId}/adjustments`, {
      amount: -0.5,
      reason: 'credited 50 cents too much',
    });
    expect(debit.status).toBe(201);
    expect(await balance(customer)).toBe(25);
    expect(await ledgerTotal(ex.db)).toBe(0);
  });

  it('refuses 0, fractions of a cent, a blank reason, the platform itself and unknown accounts', async () => {
    const customer = await ex.party('adjust-bad');
    const url = `/v1/admin/accounts/${customer.accountId}/adjustments`;
    for (const body of [
      { amount: 0, reason: 'nothing' },
      { amount: 1.005, reason: 'a fraction' },
      { amount: 10, reason: ' ' },
      { amount: 10 },
      { amount: '10', reason: 'a string' },
    ]) {
      const r = await admin('POST', url, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json['error']).toMatchObject({ code: 'invalid_request' });
    }
    const platform = await admin('POST', `/v1/admin/accounts/${PLATFORM_ACCOUNT_ID}/adjustments`, {
      amount: 10,
      reason: 'to itself',
    });
    expect(platform.status).toBe(400);
    expect(
      (await admin('POST', '/v1/admin/accounts/acc_none/adjustments', { amount: 1, reason: 'x' }))
        .status,
    ).toBe(404);
    expect(await balance(customer)).toBe(0);
    expect(await auditOf(customer.accountId)).toHaveLength(1); // account.create only
  });
});

describe('an operator records a payout of a provider’s earnings', () => {
  it('moves the earnings to the payouts account; the provider sees it; above the balance is refused', async () => {
    const { provider } = await earningProvider('payout');
    const paidBefore = await balanceOf(ex.db, PAYOUTS_ACCOUNT_ID);

    const tooMuch = await admin('POST', `/v1/admin/accounts/${provider.accountId}/payouts`, {
      amount: 57.61,
      reason: 'monthly payout',
    });
    expect(tooMuch.status).toBe(402);
    expect(tooMuch.json['error']).toMatchObject({ code: 'insufficient_funds' });
    expect(await balance(provider)).toBe(57.6);

    const r = await admin('POST', `/v1/admin/accounts/${provider.accountId}/payouts`, {
      amount: 50,
      reason: 'monthly payout, wire 2026-11',
    });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({
      transaction_kind: 'payout',
      amount: -50,
      balance_before: 57.6,
      balance: 7.6,
    });
    expect(await balance(provider)).toBe(7.6);
    expect(await balanceOf(ex.db, PAYOUTS_ACCOUNT_ID)).toBe(paidBefore + 5000);
    expect(await ledgerTotal(ex.db)).toBe(0);
    // The provider sees its payout in its own ledger.
    const own = await ex.call('GET', '/v1/account/transactions?limit=1', provider.token);
    expect(own.json['transactions']).toEqual([
      expect.objectContaining({
        transaction_id: r.json['transaction_id'],
        transaction_kind: 'payout',
        kind: 'payout',
        amount: -50,
      }),
    ]);
    const [entry] = await auditOf(provider.accountId);
    expect(entry).toMatchObject({
      action: 'account.payout',
      before: { balance: 57.6 },
      after: { balance: 7.6, amount: -50, transaction_id: r.json['transaction_id'] },
    });

    // The rest, exactly: allowed; then nothing is left to pay.
    expect(
      (
        await admin('POST', `/v1/admin/accounts/${provider.accountId}/payouts`, {
          amount: 7.6,
          reason: 'the rest',
        })
      ).status,
    ).toBe(201);
    expect(await balance(provider)).toBe(0);
    const more = await admin('POST', `/v1/admin/accounts/${provider.accountId}/payouts`, {
      amount: 0.01,
      reason: 'one cent more',
    });
    expect(more.status).toBe(402);
    for (const body of [
      { amount: 0, reason: 'zero' },
      { amount: -1, reason: 'negative' },
    ]) {
      expect(
        (await admin('POST', `/v1/admin/accounts/${provider.accountId}/payouts`, body)).status,
      ).toBe(400);
    }
    expect(await auditOf(provider.accountId)).toHaveLength(3); // create, two payouts
  });

  it('two payouts at once cannot together pay out more than the balance', async () => {
    const { provider } = await earningProvider('payout-race');
    const pay = () =>
      admin('POST', `/v1/admin/accounts/${provider.accountId}/payouts`, {
        amount: 40,
        reason: 'paid twice by mistake',
      });
    const statuses = (await Promise.all([pay(), pay()])).map((r) => r.status).sort();
    expect(statuses).toEqual([201, 402]);
    expect(await balance(provider)).toBe(17.6);
  });
});
