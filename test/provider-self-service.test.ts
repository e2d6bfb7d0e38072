// A provider takes itself off the market with its own token (issue 23), end
// to end: the built exchange on PostgreSQL, the built agent (simulated
// provisioner, GPUX_ASK_PRICE set) listing the cluster's free nodes, and
// `gpux` as a child process. With a token of the README's scopes
// (`provider` + `read`) the provider cordons its cluster (`gpux cluster
// cordon`): its sells leave the book, the agent's next sells are refused
// (it lists none), the lease sold on it goes on; uncordoned, the agent lists
// the free node again. The same token cancels the account's sell but not its
// buy. The agent restarted without GPUX_ASK_PRICE withdraws the sells it
// listed and lists none; a sell listed by hand stays.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { customerCli, jsonOf } from './support/customer-cli.js';
import { ProviderStack } from './support/provider-stack.js';
import type { Account } from './support/provider-stack.js';

let stack: ProviderStack;
/** The provider's account with a token of `provider` + `read` only. */
let own: Account;

beforeAll(async () => {
  stack = await ProviderStack.start({
    nodes: ['gpu-a', 'gpu-b'],
    askPrice: '2.50',
    label: 'gpux_provider_self',
  });
  const t = await stack.ok(
    'POST',
    `/v1/admin/accounts/${stack.provider.accountId}/tokens`,
    stack.adminToken,
    { scopes: ['provider', 'read'], reason: 'the provider runs its own fleet' },
  );
  own = { accountId: stack.provider.accountId, token: t['token'] as string };
});

afterAll(async () => {
  await stack?.close();
});

const gpux = customerCli(() => stack);

interface SellingStatus {
  readonly askCents: number | null;
  readonly listedNodes: number;
  readonly refusal?: { readonly code: string; readonly atMs: number };
}

/** The agent's `selling` in its status.json (rewritten every heartbeat). */
function selling(): SellingStatus | undefined {
  try {
    const s = JSON.parse(readFileSync(join(stack.agentStateDir, 'status.json'), 'utf8')) as {
      selling?: SellingStatus;
    };
    return s.selling;
  } catch {
    return undefined; // being replaced, or not written yet
  }
}

/** GPUs asked in this stack's book. */
async function asks(): Promise<number> {
  const book = await stack.ok(
    'GET',
    `/v1/orderbook?gpu_type=${stack.gpuType}&zone=${stack.zone}`,
    own.token,
  );
  return (book['asks'] as { gpus: number }[]).reduce((n, a) => n + a.gpus, 0);
}

/** The account's pending sells. */
async function pendingSells(token = own.token): Promise<Record<string, unknown>[]> {
  const r = await stack.ok('GET', '/v1/orders?side=sell&status=pending', token);
  return r['orders'] as Record<string, unknown>[];
}

describe('a provider off the market with its own token (issue 23)', () => {
  let leaseId = '';

  it('cordon: its sells leave the book, the agent lists none, the lease goes on', async () => {
    await stack.waitForAsks(16);
    const order = await stack.buyNode();
    leaseId = order['lease_id'] as string;
    await stack.waitForLease(leaseId);
    await stack.waitForAsks(8);

    const r = await gpux(own, 'cluster', 'cordon', stack.clusterId, '--reason', 'disk swap');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(`^${stack.clusterId} cordoned since .+, by you: it takes no new sells`, 'm'),
    );
    expect(r.stdout).toMatch(/^sells withdrawn: ord_/m);
    expect(await asks()).toBe(0);
    expect(await pendingSells()).toEqual([]);

    // The agent's next round is refused: it keeps the refusal and lists nothing.
    await stack.waitFor('the agent refused a sell', () =>
      selling()?.refusal?.code === 'cluster_cordoned' ? true : undefined,
    );
    expect(await asks()).toBe(0);
    expect(await pendingSells()).toEqual([]);
    // The lease sold on it runs on; the provider's view shows the cordon and the lease.
    expect((await stack.ok('GET', `/v1/leases/${leaseId}`, stack.buyer.token))['status']).toBe(
      'active',
    );
    const mine = await stack.ok('GET', `/v1/clusters/${stack.clusterId}`, own.token);
    expect(mine['cluster']).toMatchObject({ cordoned_by: 'provider', open_sells: 0 });
    expect(mine['leases']).toMatchObject([{ lease_id: leaseId, status: 'active' }]);
    // `gpux cluster ID` says so; the audit log names the provider.
    const shown = await gpux(own, 'cluster', stack.clusterId);
    expect(shown.stdout).toMatch(/^cordoned: yes, by you$/m);
    const audit = await stack.ok(
      'GET',
      `/v1/admin/audit?action=cluster.cordon&target_id=${stack.clusterId}`,
      stack.adminToken,
    );
    expect(audit['entries']).toMatchObject([
      { actor: own.accountId, reason: 'disk swap', after: { cordoned_by: 'provider' } },
    ]);
  });

  it('uncordon: the agent lists the free node again; --json is the API’s answer', async () => {
    const r = jsonOf(await gpux(own, 'cluster', 'uncordon', stack.clusterId, '--json'));
    expect(r).toMatchObject({
      changed: true,
      cancelled_order_ids: [],
      cluster: { cluster_id: stack.clusterId, cordoned_at: null, cordoned_by: null },
    });
    await stack.waitForAsks(8);
    // Uncordoning again changes nothing.
    const again = jsonOf(await gpux(own, 'cluster', 'uncordon', stack.clusterId, '--json'));
    expect(again['changed']).toBe(false);
  });

  it('an operator’s cordon: the provider cannot lift it (exit 5)', async () => {
    await stack.ok('POST', `/v1/admin/clusters/${stack.clusterId}/cordon`, stack.adminToken, {
      reason: 'review',
    });
    const r = await gpux(own, 'cluster', 'uncordon', stack.clusterId);
    expect(r.code).toBe(5);
    expect(r.stderr).toContain('cluster_cordoned');
    // Another account's token: not found (exit 4), as if the cluster did not exist.
    const stranger = await stack.createAccount('stranger', ['provider', 'read']);
    expect((await gpux(stranger, 'cluster', 'cordon', stack.clusterId)).code).toBe(4);
    await stack.ok('POST', `/v1/admin/clusters/${stack.clusterId}/uncordon`, stack.adminToken, {
      reason: 'review done',
    });
    await stack.waitForAsks(8);
  });

  it('the provider token cancels the account’s sell, not its buy', async () => {
    const [sell] = await pendingSells();
    const sellId = sell?.['order_id'] as string;
    const cancelled = await stack.call('DELETE', `/v1/orders/${sellId}`, own.token);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.json).toMatchObject({ order_id: sellId, status: 'cancelled' });
    // A buy of the account (placed with its trade token) is not the provider token's to cancel.
    const bid = await stack.ok('POST', '/v1/orders', stack.provider.token, {
      side: 'buy',
      gpu_type: stack.gpuType,
      zone: stack.zone,
      gpu_count: 8,
      duration_hours: 2,
      limit_price: 1.5,
    });
    const bidId = bid['order_id'] as string;
    const refused = await stack.call('DELETE', `/v1/orders/${bidId}`, own.token);
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({ error: { code: 'forbidden' } });
    expect((await gpux(own, 'cancel', bidId)).code).toBe(3);
    await stack.ok('DELETE', `/v1/orders/${bidId}`, stack.provider.token);
  });

  it('the agent restarted without GPUX_ASK_PRICE withdraws its sells, lists none, leaves a hand-listed one', async () => {
    await stack.waitForAsks(8);
    expect(await pendingSells()).toHaveLength(1);
    await stack.stopAgent();
    // Its sells outlive it (still listed while it is down).
    expect(await pendingSells()).toHaveLength(1);
    await stack.startAgent({ GPUX_ASK_PRICE: '' });
    await stack.waitFor('the sells withdrawn', async () =>
      (await pendingSells()).length === 0 ? true : undefined,
    );
    expect(await asks()).toBe(0);
    // Its status says it does not sell, after a round that found nothing to list.
    await stack.waitFor('a round without a price', () => {
      const s = selling();
      return s !== undefined && s.askCents === null && s.listedNodes === 0 ? true : undefined;
    });
    // A sell listed by hand (`gpux sell`) is not the agent's: a round later it is still listed.
    const byHand = await stack.ok('POST', '/v1/orders', stack.provider.token, {
      side: 'sell',
      gpu_type: stack.gpuType,
      zone: stack.zone,
      gpu_count: 8,
      duration_hours: 24,
      limit_price: 2.5,
      cluster_id: stack.clusterId,
    });
    await stack.waitFor('a round that saw the hand-listed sell', () =>
      selling()?.listedNodes === 1 ? true : undefined,
    );
    const kept = await stack.ok('GET', `/v1/orders/${byHand['order_id'] as string}`, own.token);
    expect(kept['status']).toBe('pending');
    await stack.ok('DELETE', `/v1/orders/${byHand['order_id'] as string}`, own.token);
    expect(await asks()).toBe(0);
    expect((await stack.ok('GET', `/v1/leases/${leaseId}`, stack.buyer.token))['status']).toBe(
      'active',
    );
  });
});
