// Resale across real processes (D27, D26, D32): the built exchange on a fresh
// PostgreSQL database, the built agent (simulated provisioner) on a cluster of
// one node, and the real OpenSSH client. Buyer A's lease goes active and A
// logs in; A resells the lease and buyer B's bid takes it. At the transfer
// A's open session is closed and A's logins are refused; B logs in with B's
// key through the same node's endpoint (same host, port and host key). The
// money is D27's: B pays the sale and its fee, A nets 90 % of the sale plus
// the original rate for the hours nobody uses, taken back from the provider
// less the platform's fee on them, and the ledger sums to zero (D3).

import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ProviderStack } from './support/provider-stack.js';
import type { Account, Transaction } from './support/provider-stack.js';
import { leaseTarget, makeSshKey, openSession, runSsh } from './support/ssh-client.js';
import type { SshKey, SshTarget } from './support/ssh-client.js';

const ASK = 2.5;
const RESALE_PRICE = 3;
const HOURS = 3;
const RESOLD_HOURS = 2;
const GPUS = 8;
const HOUR_MS = 3_600_000;

/** n / d rounded half-even (D1), non-negative integers. */
function halfEven(n: number, d: number): number {
  const q = Math.floor(n / d);
  const r = n - q * d;
  if (2 * r > d) return q + 1;
  if (2 * r < d) return q;
  return q % 2 === 0 ? q : q + 1;
}

const cents = (dollars: number): number => Math.round(dollars * 100);

let stack: ProviderStack;
let a: Account;
let b: Account;
let keyA: SshKey;
let keyB: SshKey;

beforeAll(async () => {
  stack = await ProviderStack.start({
    nodes: ['rs-1'],
    askPrice: ASK.toFixed(2),
    label: 'gpux_e2e_resale',
  });
  a = stack.buyer;
  b = await stack.createAccount('lab-b');
  keyA = makeSshKey(stack.dir, 'buyer-a');
  keyB = makeSshKey(stack.dir, 'buyer-b');
  for (const [who, key] of [
    [a, keyA],
    [b, keyB],
  ] as const) {
    await stack.ok('POST', '/v1/ssh_keys', who.token, {
      name: 'laptop',
      public_key: key.publicKey,
    });
  }
});

afterAll(async () => {
  await stack?.close();
});

/** The lease read's first endpoint, pinned to its reported host key, with `key`. */
function targetOf(lease: Record<string, unknown>, key: SshKey, name: string): SshTarget {
  return leaseTarget(lease, key, join(stack.dir, `known_hosts-${name}`));
}

async function balanceCents(who: Account): Promise<number> {
  return cents(await stack.balance(who));
}

describe('resale across processes (D27)', () => {
  it("the reseller's access ends at the transfer, the new buyer's begins, and the money is D27's", async () => {
    // A buys the cluster's one node and logs in.
    await stack.waitForAsks(GPUS);
    const bought = await stack.ok('POST', '/v1/orders', a.token, {
      side: 'buy',
      gpu_type: stack.gpuType,
      zone: stack.zone,
      gpu_count: GPUS,
      duration_hours: HOURS,
    });
    expect(bought).toMatchObject({ status: 'filled', matched_price: ASK });
    const leaseA = bought['lease_id'] as string;
    const readA = await stack.waitForLease(leaseA, a.token);
    const targetA = targetOf(readA, keyA, 'a');
    const login = await runSsh(targetA, 'echo "$GPUX_LEASE_ID"');
    expect(login, login.stderr).toMatchObject({ code: 0, stdout: `${leaseA}\n` });
    const session = await openSession(targetA);

    // A resells the whole lease; it rests in the book, A keeps its access meanwhile.
    const resale = await stack.ok('POST', `/v1/leases/${leaseA}/resell`, a.token, {
      limit_price: RESALE_PRICE,
    });
    expect(resale).toMatchObject({ lease_id: leaseA, status: 'pending' });
    expect((await runSsh(targetA, 'true')).code).toBe(0);

    // B's bid of 2 of the remaining hours takes it: the transfer is the match.
    const bid = await stack.ok('POST', '/v1/orders', b.token, {
      side: 'buy',
      gpu_type: stack.gpuType,
      zone: stack.zone,
      gpu_count: GPUS,
      duration_hours: RESOLD_HOURS,
      limit_price: RESALE_PRICE,
    });
    expect(bid).toMatchObject({
      status: 'filled',
      avg_price: RESALE_PRICE,
      total_cost: RESALE_PRICE * GPUS * RESOLD_HOURS,
    });
    const leaseB = bid['lease_id'] as string;

    // A's access ends: the open session is closed with a message, new logins refused.
    const closed = await session.ended;
    expect(closed.code).toBe(255);
    expect(closed.stderr).toContain(`gpux: lease ${leaseA} resold`);
    expect((await runSsh(targetA, 'true')).code).toBe(255);

    // B's begins, on the same node's endpoint (same host, port and host key), with B's key only.
    const readB = await stack.waitForLease(leaseB, b.token);
    expect(readB['nodes']).toEqual(readA['nodes']);
    expect(readB['ssh_host_keys']).toEqual(readA['ssh_host_keys']);
    const targetB = targetOf(readB, keyB, 'b');
    expect({ host: targetB.endpoint.host, port: targetB.endpoint.port }).toEqual({
      host: targetA.endpoint.host,
      port: targetA.endpoint.port,
    });
    expect(targetB.endpoint.user).not.toBe(targetA.endpoint.user);
    const loginB = await runSsh(targetB, 'echo "$GPUX_LEASE_ID"');
    expect(loginB, loginB.stderr).toMatchObject({ code: 0, stdout: `${leaseB}\n` });
    expect((await runSsh({ ...targetB, key: keyA }, 'true')).code).toBe(255);
    expect((await runSsh({ ...targetA, key: keyB }, 'true')).code).toBe(255);
    // The kubeconfig follows the lease (D28).
    expect((await stack.call('GET', `/v1/leases/${leaseA}/kubeconfig`, a.token)).status).toBe(404);
    expect((await stack.call('GET', `/v1/leases/${leaseB}/kubeconfig`, b.token)).status).toBe(200);

    // A's lease ended at the transfer, resold, with the original refund for the unused hours.
    const endedA = await stack.ok('GET', `/v1/leases/${leaseA}`, a.token);
    expect(endedA).toMatchObject({ status: 'terminated', end_reason: 'resold' });
    expect((await stack.call('DELETE', `/v1/leases/${leaseA}`, a.token)).json).toMatchObject({
      error: { code: 'lease_not_active' },
    });
    const transferMs = Date.parse(endedA['ended_at'] as string);
    const unusedMs = Date.parse(endedA['end_time'] as string) - transferMs - RESOLD_HOURS * HOUR_MS;
    expect(unusedMs).toBeGreaterThan(0);
    // D27 original_refund = original rate × (remaining hours at transfer − d) × GPUs, half-even once.
    const refund = halfEven(cents(ASK) * GPUS * unusedMs, HOUR_MS);
    const refundFee = halfEven(refund, 10);
    expect(cents(endedA['refund_amount'] as number)).toBe(refund);
    expect(
      (await stack.ok('GET', `/v1/orders/${resale['order_id'] as string}`, a.token))['status'],
    ).toBe('filled');

    // The money of D27 (D2 fees of 10 % on each side).
    const charge = cents(ASK) * GPUS * HOURS; // 6000
    const sale = cents(RESALE_PRICE) * GPUS * RESOLD_HOURS; // 4800
    const rowsA = await stack.transactions(a);
    const resaleRefund = rowsA.filter((t) => t.transaction_kind === 'resale_refund');
    expect(resaleRefund).toEqual([
      expect.objectContaining({ kind: 'refund', amount: refund / 100, lease_id: leaseA }),
    ]);
    const sumOf = (rows: Transaction[], kind: string) =>
      rows.filter((t) => t.kind === kind).reduce((s, t) => s + cents(t.amount), 0);
    // A: paid the lease and its fee; got the sale less the fee, and the original refund.
    expect({
      buyer_charge: sumOf(rowsA, 'buyer_charge'),
      buyer_fee: sumOf(rowsA, 'buyer_fee'),
      seller_proceeds: sumOf(rowsA, 'seller_proceeds'),
      seller_fee: sumOf(rowsA, 'seller_fee'),
      refund: sumOf(rowsA, 'refund'),
    }).toEqual({
      buyer_charge: -charge,
      buyer_fee: -charge / 10,
      seller_proceeds: sale,
      seller_fee: -sale / 10,
      refund,
    });
    expect(await balanceCents(a)).toBe(-charge - charge / 10 + sale - sale / 10 + refund);
    // B: the sale and its fee.
    const rowsB = await stack.transactions(b);
    expect(rowsB.map((t) => [t.kind, cents(t.amount), t.lease_id]).sort()).toEqual(
      [
        ['buyer_charge', -sale, leaseB],
        ['buyer_fee', -sale / 10, leaseB],
      ].sort(),
    );
    expect(await balanceCents(b)).toBe(-sale - sale / 10);
    // The provider: the original fill, less the refunded hours net of the platform's fee.
    const rowsP = await stack.transactions(stack.provider);
    expect(
      rowsP
        .filter((t) => t.kind === 'refund_reversal')
        .map((t) => [t.transaction_kind, cents(t.amount), t.lease_id]),
    ).toEqual([['resale_refund', -(refund - refundFee), leaseA]]);
    expect(await balanceCents(stack.provider)).toBe(charge - charge / 10 - (refund - refundFee));
    // The platform: four fees, less its fee on the refund; everything sums to zero (D3).
    const platform = await stack.ok('GET', '/v1/admin/platform', stack.adminToken);
    const platformCents = cents(platform['balance'] as number);
    expect(platformCents).toBe(2 * (charge / 10) + 2 * (sale / 10) - refundFee);
    expect(
      platformCents +
        (await balanceCents(a)) +
        (await balanceCents(b)) +
        (await balanceCents(stack.provider)),
    ).toBe(0);
  }, 90_000);
});
