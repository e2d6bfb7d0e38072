// BookState on its own: commands against a bare ChangeSet, no database.
// Given a book with a provider's cluster, when a command runs, then the rows,
// postings and outbox events it records are what the decisions say.

import { HOUR_MS, SUBJECTS, leaseNamespace, newId } from '@gpux/shared';
import type { LeaseProvisionEvent, LeaseRevokeEvent } from '@gpux/shared';
import { beforeEach, describe, expect, it } from 'vitest';

import { PLATFORM_ACCOUNT_ID } from '../ledger/ledger.js';
import { OrderBook } from '../matching/index.js';
import { holdCents } from '../orders/credit.js';
import { BookState } from './book-state.js';
import { addNode, emptyCluster } from './capacity.js';
import { ChangeSet } from './change-set.js';
import { newOrderRow } from './rows.js';
import type { OrderRow } from './rows.js';

const T0 = Date.UTC(2026, 10, 22);
const PROVISIONING_TIMEOUT_MS = 5 * 60_000;

let state: BookState;
let changes: ChangeSet;

function given(nodes = 4): void {
  state = new BookState('h100', 'us-west-1', new OrderBook(), 0, {
    provisioningTimeoutMs: PROVISIONING_TIMEOUT_MS,
  });
  const c = emptyCluster('cls_a', 'acc_provider');
  for (let i = 0; i < nodes; i++) {
    addNode(c, { id: `nod_${i}`, hostname: `node-${i}.example`, status: 'online' });
  }
  state.clusters.set(c.id, c);
}

function order(o: Partial<OrderRow> & Pick<OrderRow, 'side'>): OrderRow {
  const sell = o.side === 'sell';
  return newOrderRow({
    id: newId('ord_'),
    account_id: sell ? 'acc_provider' : 'acc_buyer',
    organization_id: sell ? 'org_provider' : 'org_buyer',
    order_type: sell || o.limit_price_cents != null ? 'limit' : 'market',
    gpu_type: 'h100',
    zone: 'us-west-1',
    gpu_count: 8,
    duration_hours: sell ? 720 : 10,
    limit_price_cents: sell ? 200 : null,
    allow_partial: false,
    start_ms: T0,
    flexible_window_hours: null,
    expires_input_ms: null,
    cluster_id: sell ? 'cls_a' : null,
    resale_lease_id: null,
    transfer_immediately: null,
    created_ms: T0,
    ...o,
  });
}

/** Run one command on a fresh change set. */
function run<T>(command: (c: ChangeSet) => T): T {
  changes = new ChangeSet();
  return command(changes);
}

beforeEach(() => given());

describe('BookState.place', () => {
  it('a sell rests and takes capacity; a market buy fills it into one lease (D11) with its postings and event', () => {
    const sell = run((c) => state.place(order({ side: 'sell', gpu_count: 16 }), T0, c));
    expect(sell.ok && sell.order.status).toBe('pending');
    expect(state.clusters.get('cls_a')?.openSellNodes).toBe(2);

    const buy = run((c) => state.place(order({ side: 'buy' }), T0, c));
    if (!buy.ok) throw new Error(buy.message);
    expect(buy.order).toMatchObject({ status: 'filled', filled_gpus: 8, book_state: null });
    expect(buy.fills).toEqual([
      expect.objectContaining({ gpus: 8, price_cents: 200, hours: 10, at_ms: T0 }),
    ]);
    const [lease] = [...changes.leases.values()];
    expect(lease).toMatchObject({
      account_id: 'acc_buyer',
      seller_account_id: 'acc_provider',
      cluster_id: 'cls_a',
      status: 'provisioning',
      hourly_cents: 1600,
      compute_cents: 16_000,
      fee_cents: 1600,
      start_ms: T0,
      end_ms: T0 + 10 * HOUR_MS,
    });
    expect(changes.leaseNodes).toHaveLength(1);
    // D32: the buyer's SSH keys are copied in the same batch.
    expect(changes.keySnapshots).toEqual([{ lease_id: lease?.id, account_id: 'acc_buyer' }]);
    // D2: the buyer pays compute + fee, the seller gets 90 %, the platform both fees.
    expect(changes.ledger).toHaveLength(1);
    expect(changes.ledger[0]?.postings).toEqual([
      { accountId: 'acc_buyer', kind: 'buyer_charge', amountCents: -16_000 },
      { accountId: 'acc_buyer', kind: 'buyer_fee', amountCents: -1600 },
      { accountId: 'acc_provider', kind: 'seller_proceeds', amountCents: 16_000 },
      { accountId: 'acc_provider', kind: 'seller_fee', amountCents: -1600 },
      { accountId: PLATFORM_ACCOUNT_ID, kind: 'platform_fee', amountCents: 3200 },
    ]);
    // The typed provision event carries its own id, which is the outbox row's.
    const [row] = changes.outbox;
    const event = row?.payload as LeaseProvisionEvent;
    expect(row?.subject).toBe(SUBJECTS.leaseProvision('cls_a'));
    expect(event).toMatchObject({
      event_id: row?.event_id,
      lease_id: lease?.id,
      namespace: leaseNamespace(lease?.id ?? ''),
      nodes: [
        { hostname: changes.leaseNodes[0]?.hostname, ssh_user: `${lease?.id.replace('_', '-')}-1` },
      ],
      start_ms: T0,
      end_ms: T0 + 10 * HOUR_MS,
    });
    expect(state.clusters.get('cls_a')?.openSellNodes).toBe(1);
    expect(state.clusters.get('cls_a')?.leased.size).toBe(1);
  });

  it('D31: a sell over the free nodes is refused (returned, not thrown) and changes nothing', () => {
    const r = run((c) => state.place(order({ side: 'sell', gpu_count: 40 }), T0, c));
    expect(r).toMatchObject({ ok: false, code: 'insufficient_capacity' });
    expect(changes.empty).toBe(true);
    expect(state.orders.size).toBe(0);
  });

  it("D10: the engine's refusal comes back as a Refusal with missing_gpus", () => {
    const r = run((c) => state.place(order({ side: 'buy', gpu_count: 16 }), T0, c));
    expect(r).toMatchObject({ ok: false, code: 'insufficient_liquidity', missingGpus: 16 });
  });

  it('D3: a held market buy whose fills now cost more than its hold is refused, and its hold dropped', () => {
    run((c) => state.place(order({ side: 'sell' }), T0, c));
    const tooSmall = holdCents(8 * 10 * 200, 1) - 1;
    const b = order({ side: 'buy' });
    const r = run((c) => state.place(b, T0, c, tooSmall));
    expect(r).toMatchObject({ ok: false, code: 'insufficient_funds' });
    expect(changes.holds.get(b.id)).toBe(0);
    expect(changes.leases.size).toBe(0);
    // With a hold that covers it, the same buy fills and its hold goes with it.
    const b2 = order({ side: 'buy' });
    const ok = run((c) => state.place(b2, T0, c, tooSmall + 1));
    expect(ok.ok).toBe(true);
    expect(changes.holds.get(b2.id)).toBe(0);
    expect(state.holds.size).toBe(0);
  });
});

describe('BookState lease commands', () => {
  function leased(): string {
    run((c) => state.place(order({ side: 'sell' }), T0, c));
    run((c) => state.place(order({ side: 'buy' }), T0, c));
    const [lease] = [...changes.leases.values()];
    if (lease === undefined) throw new Error('no lease');
    return lease.id;
  }

  it('D26: terminate refunds the rest of the lease and emits its revocation', () => {
    const id = leased();
    run((c) => state.leaseReady(id, T0 + 1000, c));
    const at = T0 + 4 * HOUR_MS;
    const r = run((c) => state.terminate(id, 'acc_buyer', at, c));
    if (!r.ok) throw new Error(r.message);
    // 6 h left × $2 × 8 GPUs.
    expect(r.refund).toEqual({ usedMs: 4 * HOUR_MS, remainingMs: 6 * HOUR_MS, refundCents: 9600 });
    expect(changes.leases.get(id)).toMatchObject({ status: 'terminated', refund_cents: 9600 });
    expect(changes.ledger[0]?.postings.map((p) => p.amountCents)).toEqual([9600, -8640, -960]);
    const revoke = changes.outbox[0]?.payload as LeaseRevokeEvent;
    expect(revoke).toMatchObject({ lease_id: id, reason: 'terminated', at_ms: at });
    expect(state.clusters.get('cls_a')?.leased.size).toBe(0);
    // D26: a second DELETE is lease_not_active.
    expect(run((c) => state.terminate(id, 'acc_buyer', at, c))).toMatchObject({
      ok: false,
      code: 'lease_not_active',
    });
  });

  it("another account's lease is lease_not_active, never touched", () => {
    const id = leased();
    expect(run((c) => state.terminate(id, 'acc_someone', T0, c))).toMatchObject({
      code: 'lease_not_active',
    });
    expect(changes.empty).toBe(true);
  });

  it('D25: a lease still provisioning after the timeout fails with a full refund', () => {
    const id = leased();
    run((c) => state.tick(T0 + PROVISIONING_TIMEOUT_MS, c));
    expect(changes.leases.get(id)).toMatchObject({ status: 'failed', refund_cents: 17_600 });
    expect(changes.ledger[0]).toMatchObject({ kind: 'lease_failed' });
    expect(changes.ledger[0]?.postings.map((p) => p.amountCents)).toEqual([17_600, -14_400, -3200]);
    expect((changes.outbox[0]?.payload as LeaseRevokeEvent).reason).toBe('failed');
  });

  it('a lease made ready expires at its end, without a refund', () => {
    const id = leased();
    run((c) => state.leaseReady(id, T0 + 1000, c));
    expect(changes.leases.get(id)).toMatchObject({ status: 'active', ready_ms: T0 + 1000 });
    run((c) => state.tick(T0 + 10 * HOUR_MS, c));
    expect(changes.leases.get(id)).toMatchObject({ status: 'expired', refund_cents: null });
    expect(changes.ledger).toEqual([]);
    expect((changes.outbox[0]?.payload as LeaseRevokeEvent).reason).toBe('expired');
  });

  it('D27: a lease offered twice is refused while its first resell order is open', () => {
    const id = leased();
    run((c) => state.leaseReady(id, T0, c));
    const request = {
      accountId: 'acc_buyer',
      organizationId: 'org_buyer',
      priceCents: 300,
      transferImmediately: false,
    };
    const first = run((c) => state.resell(id, request, T0 + HOUR_MS, c));
    expect(first.ok).toBe(true);
    expect(run((c) => state.resell(id, request, T0 + HOUR_MS, c))).toMatchObject({
      ok: false,
      code: 'invalid_request',
    });
  });
});

describe('BookState and the agents (D25, D29)', () => {
  it('D29: nodes going offline withdraw the newest sells until what is left fits; a live lease stays', () => {
    // 4 nodes: one leased, then two sells of one node each.
    run((c) => state.place(order({ side: 'sell' }), T0, c));
    run((c) => state.place(order({ side: 'buy' }), T0, c));
    const older = run((c) => state.place(order({ side: 'sell', created_ms: T0 + 1 }), T0 + 1, c));
    const newer = run((c) => state.place(order({ side: 'sell', created_ms: T0 + 2 }), T0 + 2, c));
    if (!older.ok || !newer.ok) throw new Error('sells refused');
    // Two free nodes go offline: 2 up, 1 leased, so only one sell still fits.
    const leased = state.clusters.get('cls_a')?.leased;
    const free = ['nod_0', 'nod_1', 'nod_2', 'nod_3'].filter((id) => !leased?.has(id));
    const offline = new Map(free.slice(0, 2).map((id) => [id, 'offline' as const]));
    run((c) => state.setNodeStatus('cls_a', offline, T0 + 3, c));
    expect(changes.nodes).toEqual([...offline].map(([id, status]) => ({ id, status })));
    expect(changes.orders.get(newer.order.id)).toMatchObject({
      status: 'cancelled',
      cancel_reason: 'nodes_offline',
    });
    expect(changes.orders.has(older.order.id)).toBe(false);
    expect(state.leases.size).toBe(1);
    // Every node offline: the last sell goes too, the lease still stays.
    const all = new Map(['nod_0', 'nod_1', 'nod_2', 'nod_3'].map((id) => [id, 'offline' as const]));
    run((c) => state.setNodeStatus('cls_a', all, T0 + 4, c));
    expect(changes.orders.get(older.order.id)?.cancel_reason).toBe('nodes_offline');
    expect(state.leases.size).toBe(1);
  });

  it('D25: a lease the agent reports failed fails at once, with the full refund', () => {
    run((c) => state.place(order({ side: 'sell' }), T0, c));
    run((c) => state.place(order({ side: 'buy' }), T0, c));
    const [lease] = [...changes.leases.values()];
    const id = lease?.id ?? '';
    expect(run((c) => state.leaseFailed(id, T0 + 1000, c))).toBe(true);
    expect(changes.leases.get(id)).toMatchObject({
      status: 'failed',
      ended_ms: T0 + 1000,
      refund_cents: 17_600,
    });
    expect(changes.ledger[0]).toMatchObject({ kind: 'lease_failed' });
    // Once failed (or once active) a report of failure changes nothing.
    expect(run((c) => state.leaseFailed(id, T0 + 2000, c))).toBe(false);
    expect(changes.empty).toBe(true);
  });
});

describe('BookState: resale windows and transfers (D27)', () => {
  const MIN = 60_000;

  /** A 6 h lease of acc_buyer, active, and its resale from `fromMs` at $2.50. */
  function resale(
    fromMs: number,
    transferImmediately = false,
  ): { leaseId: string; orderId: string } {
    run((c) => state.place(order({ side: 'sell' }), T0, c));
    run((c) => state.place(order({ side: 'buy', duration_hours: 6 }), T0, c));
    const [lease] = [...changes.leases.values()];
    if (lease === undefined) throw new Error('no lease');
    run((c) => state.leaseReady(lease.id, T0 + 1000, c));
    const r = run((c) =>
      state.resell(
        lease.id,
        {
          accountId: 'acc_buyer',
          organizationId: 'org_buyer',
          priceCents: 250,
          availableFrom: fromMs,
          transferImmediately,
        },
        T0,
        c,
      ),
    );
    if (!r.ok) throw new Error(r.message);
    expect(r.fills).toEqual([]);
    return { leaseId: lease.id, orderId: r.order.id };
  }

  const secondBuyer = (hours: number, at: number) =>
    run((c) =>
      state.place(
        order({
          side: 'buy',
          account_id: 'acc_second',
          organization_id: 'org_second',
          duration_hours: hours,
          limit_price_cents: 300,
          created_ms: at,
          start_ms: at,
        }),
        at,
        c,
      ),
    );

  it('a 6 h lease offered from now + 15 min takes a 2 h bid at now + 30 min (not only at its end − 5 h)', () => {
    const { leaseId } = resale(T0 + 15 * MIN);
    const b = secondBuyer(2, T0 + 30 * MIN);
    if (!b.ok) throw new Error(b.message);
    expect(b.order.status).toBe('filled');
    const bought = [...changes.leases.values()].find((l) => l.source_lease_id === leaseId);
    expect(bought).toMatchObject({ start_ms: T0 + 30 * MIN, end_ms: T0 + 150 * MIN });
    // The transfer is the match: the reseller's access ends now, and its
    // original refund is the rate for what nobody uses: 5.5 h − 2 h = 3.5 h
    // × $2 × 8 GPUs.
    expect(changes.leases.get(leaseId)).toMatchObject({
      status: 'terminated',
      end_reason: 'resold',
      ended_ms: T0 + 30 * MIN,
      refund_cents: 5600,
    });
    expect(changes.outbox.map((e) => e.payload.kind)).toEqual(['lease.revoke', 'lease.provision']);
  });

  it("a buy that fits before available_from matches now; the nodes change hands at transfer_time, on the book's timer", () => {
    const { leaseId } = resale(T0 + 15 * MIN);
    secondBuyer(2, T0 + 5 * MIN);
    const bought = [...changes.leases.values()].find((l) => l.source_lease_id === leaseId);
    if (bought === undefined) throw new Error('no lease bought');
    // Bought and paid now, starting at transfer_time (D27).
    expect(bought).toMatchObject({
      start_ms: T0 + 15 * MIN,
      created_ms: T0 + 5 * MIN,
      opened_ms: null,
    });
    expect(changes.ledger.map((t) => t.kind)).toEqual(['resale_refund', 'lease_charge']);
    // The reseller keeps access until then: no event yet.
    expect(changes.outbox).toEqual([]);
    expect(changes.leases.get(leaseId)).toMatchObject({
      status: 'active',
      transfer_ms: T0 + 15 * MIN,
    });
    // Its holder cannot terminate a lease it sold.
    expect(run((c) => state.terminate(leaseId, 'acc_buyer', T0 + 10 * MIN, c))).toMatchObject({
      code: 'lease_not_active',
    });
    run((c) => state.tick(T0 + 15 * MIN, c));
    expect(changes.leases.get(leaseId)).toMatchObject({
      status: 'terminated',
      ended_ms: T0 + 15 * MIN,
    });
    expect(changes.leases.get(bought.id)).toMatchObject({ opened_ms: T0 + 15 * MIN });
    expect(changes.outbox.map((e) => [e.payload.kind, e.payload.lease_id])).toEqual([
      ['lease.revoke', leaseId],
      ['lease.provision', bought.id],
    ]);
    expect(
      state.clusters.get('cls_a')?.leased.get(changes.leaseNodes[0]?.node_id ?? bought.id),
    ).toBeUndefined();
  });

  it("with transfer_immediately the reseller's access ends at the match; the buyer's lease still starts at transfer_time", () => {
    const { leaseId } = resale(T0 + 15 * MIN, true);
    secondBuyer(2, T0 + 5 * MIN);
    expect(changes.outbox.map((e) => [e.payload.kind, e.payload.lease_id])).toEqual([
      ['lease.revoke', leaseId],
    ]);
    run((c) => state.tick(T0 + 15 * MIN, c));
    expect(changes.outbox.map((e) => e.payload.kind)).toEqual(['lease.provision']);
  });

  it('D25: the provisioning timeout of a lease bought ahead counts from its start, not its creation', () => {
    const { leaseId } = resale(T0 + 15 * MIN);
    secondBuyer(2, T0 + 5 * MIN);
    const bought = [...changes.leases.values()].find((l) => l.source_lease_id === leaseId);
    run((c) => state.tick(T0 + 15 * MIN + PROVISIONING_TIMEOUT_MS - 1, c));
    expect(changes.leases.get(bought?.id ?? '')).toMatchObject({ status: 'provisioning' });
    run((c) => state.tick(T0 + 15 * MIN + PROVISIONING_TIMEOUT_MS, c));
    expect(changes.leases.get(bought?.id ?? '')).toMatchObject({ status: 'failed' });
  });
});
