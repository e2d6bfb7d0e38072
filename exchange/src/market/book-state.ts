// Everything one book owns, in memory, changed by its single writer only:
// the matching engine's book, its open orders' rows, its clusters' node
// capacity and its live leases. Commands run synchronously and record what
// they changed in a ChangeSet, which the writer commits (book-writer.ts).
//
// Money rules: D2 (fees), D3 (ledger), D4/D26 (refunds), D25 (failed),
// D27 (resale). Lease rules: D11, D25-D27, D31.

import {
  GPUS_PER_NODE,
  GpuxError,
  HOUR_MS,
  SUBJECTS,
  leaseNamespace,
  mulDivHalfEven,
  newId,
  splitFee,
} from '@gpux/shared';
import type { CancelReason, GpuType, Zone } from '@gpux/shared';

import { PLATFORM_ACCOUNT_ID, fillPostings } from '../ledger/ledger.js';
import type { Posting } from '../ledger/ledger.js';
import { leaseGroups } from '../matching/index.js';
import type { BookEvent, Fill, LeaseGroup, OrderBook } from '../matching/index.js';
import type { ChangeSet } from './change-set.js';
import { inputOf, statusOf, syncBookColumns } from './rows.js';
import type { FillRow, LeaseNodeRow, LeaseRow, OrderRow } from './rows.js';
import { orderView, refundAt } from './views.js';
import type { OrderJson } from './views.js';

export interface NodeState {
  readonly id: string;
  readonly hostname: string;
  status: 'available' | 'online' | 'offline';
}

export interface ClusterState {
  readonly id: string;
  readonly providerAccountId: string;
  readonly nodes: NodeState[];
  /** node id → the live lease on it. */
  readonly leased: Map<string, string>;
  /** Nodes offered by the cluster's open sell orders (resales excluded). */
  openSellNodes: number;
  /** Where the search for a free node starts: just after the last one leased. */
  nextFree: number;
}

export interface LiveLease {
  readonly row: LeaseRow;
  nodes: LeaseNodeRow[];
  /** Its pending resell order, if any (D27). */
  resaleOrderId: string | null;
}

/** D31: nodes a new sell order may still offer. */
export function freeNodes(c: ClusterState): number {
  let up = 0;
  for (const n of c.nodes) if (n.status !== 'offline') up++;
  return up - c.leased.size - c.openSellNodes;
}

export interface PlaceRejection {
  readonly ok: false;
  readonly code:
    | 'insufficient_liquidity'
    | 'self_trade_prevented'
    | 'invalid_request'
    | 'price_out_of_collar'
    | 'order_value_too_low';
  readonly message: string;
  readonly missingGpus?: number | undefined;
}

export type PlaceOutcome = { readonly ok: true; readonly order: OrderJson } | PlaceRejection;

export type ResellOutcome =
  | { readonly live: false }
  | ({ readonly live: true } & PlaceRejection)
  | {
      readonly live: true;
      readonly ok: true;
      /** The resell order as placed, and its fill if a buyer took it at once. */
      readonly order: OrderRow;
      readonly fills: readonly FillRow[];
      /** The lease as it is now: `refund_cents` is the original refund once sold. */
      readonly sourceLease: LeaseRow;
    };

export type CancelOutcome =
  | { readonly open: true; readonly cancelledGpus: number; readonly cancelledAt: number }
  | { readonly open: false };

export type TerminateOutcome =
  | {
      readonly live: true;
      readonly lease: LeaseRow;
      readonly terminatedAt: number;
      readonly usedMs: number;
      readonly remainingMs: number;
      readonly refundCents: number;
    }
  | { readonly live: false };

export interface BookStateOptions {
  /** D25: a lease still provisioning after this long fails, refunded in full. */
  readonly provisioningTimeoutMs: number;
}

export class BookState {
  /** Open orders by id (resting, scheduled, unseen). */
  readonly orders = new Map<string, OrderRow>();
  readonly clusters = new Map<string, ClusterState>();
  readonly leases = new Map<string, LiveLease>();
  /** The last fill's number in this book (fills.book_seq). */
  fillSeq: number;

  // The running command.
  private changes: ChangeSet | null = null;
  private touched = new Set<string>();
  private newFills: FillRow[] = [];
  /** Cancellations the exchange caused, whose reason is not the engine's "user". */
  private reasonOverride = new Map<string, CancelReason>();

  constructor(
    readonly gpuType: GpuType,
    readonly zone: Zone,
    readonly book: OrderBook,
    fillSeq: number,
    private readonly options: BookStateOptions,
  ) {
    this.fillSeq = fillSeq;
  }

  /** A new order, already validated against the account (the route did). */
  place(row: OrderRow, now: number, changes: ChangeSet): PlaceOutcome {
    this.begin(changes);
    try {
      const placed = this.placeRow(row, now);
      if (!placed.ok) return placed;
      return {
        ok: true,
        order: orderView(
          row,
          this.newFills.filter((f) => isOf(f, row.id)),
        ),
      };
    } finally {
      this.end();
    }
  }

  private placeRow(row: OrderRow, now: number): PlaceRejection | { readonly ok: true } {
    const cluster =
      row.resale_lease_id === null && row.cluster_id !== null
        ? this.cluster(row.cluster_id)
        : undefined;
    const nodes = row.gpu_count / GPUS_PER_NODE;
    if (cluster !== undefined && freeNodes(cluster) < nodes) {
      throw new GpuxError(
        'insufficient_capacity',
        `cluster ${cluster.id} has ${Math.max(0, freeNodes(cluster))} free nodes; the order offers ${nodes}`,
      );
    }
    const result = this.book.place(inputOf(row), now);
    if (!result.ok) {
      this.handle(result.events);
      this.finish();
      return {
        ok: false,
        code: result.code,
        message: result.message,
        missingGpus: result.missingGpus,
      };
    }
    if (result.referencePrice !== undefined) row.reference_price_cents = result.referencePrice;
    this.orders.set(row.id, row);
    this.touched.add(row.id);
    if (cluster !== undefined) cluster.openSellNodes += nodes;
    if (row.resale_lease_id !== null) {
      const lease = this.leases.get(row.resale_lease_id);
      if (lease !== undefined) lease.resaleOrderId = row.id;
    }
    this.handle(result.events);
    this.finish();
    return { ok: true };
  }

  /** DELETE /v1/orders/{id}: `open: false` when the order is not open (any more). */
  cancel(orderId: string, accountId: string, now: number, changes: ChangeSet): CancelOutcome {
    const row = this.orders.get(orderId);
    if (row === undefined || row.account_id !== accountId) return { open: false };
    this.begin(changes);
    try {
      const result = this.book.cancel(orderId, now);
      this.handle(result.events);
      this.finish();
      if (!result.ok) return { open: false };
      return {
        open: true,
        cancelledGpus: result.nodes * GPUS_PER_NODE,
        cancelledAt: row.cancelled_ms ?? now,
      };
    } finally {
      this.end();
    }
  }

  /** D26: terminate a live lease of `accountId` now, with the refund of the rest. */
  terminate(leaseId: string, accountId: string, now: number, changes: ChangeSet): TerminateOutcome {
    const live = this.leases.get(leaseId);
    if (live === undefined || live.row.account_id !== accountId) return { live: false };
    this.begin(changes);
    try {
      this.advance(now);
      // The lease may have ended while the clock advanced.
      if (!this.leases.has(leaseId)) {
        this.finish();
        return { live: false };
      }
      const { usedMs, remainingMs, refundCents } = refundAt(live.row, now);
      this.refund(live.row, refundCents, 'lease_refund');
      this.endLease(live, 'terminated', 'terminated', now, refundCents, 'lease_terminated');
      this.finish();
      return {
        live: true,
        lease: { ...live.row },
        terminatedAt: now,
        usedMs,
        remainingMs,
        refundCents,
      };
    } finally {
      this.end();
    }
  }

  /**
   * D27: offer a live lease of `accountId` for resale as one sell order for
   * the whole lease. `build` makes the order row once the clock has
   * advanced (the lease may have ended meanwhile).
   */
  resell(
    leaseId: string,
    accountId: string,
    now: number,
    changes: ChangeSet,
    build: (lease: LeaseRow) => OrderRow,
  ): ResellOutcome {
    const live = this.leases.get(leaseId);
    if (live === undefined || live.row.account_id !== accountId) return { live: false };
    this.begin(changes);
    try {
      this.advance(now);
      this.finish();
      if (!this.leases.has(leaseId)) return { live: false };
      if (live.resaleOrderId !== null) {
        throw new GpuxError(
          'invalid_request',
          `lease ${leaseId} is already offered by resell order ${live.resaleOrderId}; cancel it first (DELETE /v1/orders/${live.resaleOrderId})`,
        );
      }
      const row = build({ ...live.row });
      const placed = this.placeRow(row, now);
      if (!placed.ok) return { live: true, ...placed };
      const fills = this.newFills.filter((f) => f.sell_order_id === row.id);
      return { live: true, ok: true, order: { ...row }, fills, sourceLease: { ...live.row } };
    } finally {
      this.end();
    }
  }

  /** The agent reported the lease provisioned (D25): provisioning → active. */
  leaseReady(leaseId: string, now: number, changes: ChangeSet): boolean {
    const live = this.leases.get(leaseId);
    if (live === undefined || live.row.status !== 'provisioning') return false;
    live.row.status = 'active';
    live.row.ready_ms = now;
    changes.lease(live.row);
    return true;
  }

  /** Time passes: the book's timers, lease ends (D25) and provisioning timeouts. */
  tick(now: number, changes: ChangeSet): void {
    this.begin(changes);
    try {
      this.advance(now);
      this.finish();
    } finally {
      this.end();
    }
  }

  // ---- internals ----

  private begin(changes: ChangeSet): void {
    this.changes = changes;
    this.touched = new Set();
    this.newFills = [];
    this.reasonOverride = new Map();
  }

  private end(): void {
    this.changes = null;
  }

  private get cs(): ChangeSet {
    if (this.changes === null) throw new Error('no command is running');
    return this.changes;
  }

  private cluster(id: string): ClusterState {
    const c = this.clusters.get(id);
    if (c === undefined)
      throw new Error(`cluster ${id} is not loaded in book ${this.gpuType}/${this.zone}`);
    return c;
  }

  private advance(now: number): void {
    this.handle(this.book.advance(now));
    for (const live of [...this.leases.values()]) {
      const l = live.row;
      if (l.end_ms <= now) {
        this.endLease(live, 'expired', 'expired', l.end_ms, null, 'expired');
      } else if (
        l.status === 'provisioning' &&
        l.created_ms + this.options.provisioningTimeoutMs <= now
      ) {
        this.failLease(live, l.created_ms + this.options.provisioningTimeoutMs);
      }
    }
  }

  /** Sync every order the command touched into its row and the change set. */
  private finish(): void {
    for (const id of this.touched) {
      const row = this.orders.get(id);
      if (row === undefined) continue;
      const oo = this.book.openOrder(id);
      syncBookColumns(row, oo);
      row.status = statusOf(row);
      this.cs.order(row);
      if (oo === undefined) this.orders.delete(id);
    }
  }

  private handle(events: readonly BookEvent[]): void {
    for (const ev of events) {
      switch (ev.type) {
        case 'rested':
          this.touched.add(ev.orderId);
          break;
        case 'matched':
          this.matched(ev.buyOrderId, ev.fills, ev.at);
          break;
        case 'cancelled': {
          const row = this.orderRow(ev.orderId);
          row.cancelled_gpus += ev.nodes * GPUS_PER_NODE;
          row.cancel_reason = this.reasonOverride.get(ev.orderId) ?? ev.reason;
          row.cancelled_ms = ev.at;
          this.touched.add(ev.orderId);
          if (row.side === 'sell') {
            if (row.resale_lease_id !== null) {
              const lease = this.leases.get(row.resale_lease_id);
              if (lease !== undefined && lease.resaleOrderId === row.id) lease.resaleOrderId = null;
            } else if (row.cluster_id !== null) {
              this.cluster(row.cluster_id).openSellNodes -= ev.nodes;
            }
          }
          break;
        }
      }
    }
  }

  private orderRow(id: string): OrderRow {
    const row = this.orders.get(id);
    if (row === undefined) throw new Error(`book event for unknown order ${id}`);
    return row;
  }

  /** One matching step (D11): one lease per cluster (or per resold lease). */
  private matched(buyOrderId: string, fills: readonly Fill[], at: number): void {
    const buy = this.orderRow(buyOrderId);
    this.touched.add(buyOrderId);
    for (const group of leaseGroups(fills)) this.createLease(buy, group, at);
  }

  private createLease(buy: OrderRow, group: LeaseGroup, at: number): void {
    const gpus = group.nodes * GPUS_PER_NODE;
    let hourly = 0;
    for (const f of group.fills) hourly += f.price * f.nodes * GPUS_PER_NODE;
    const compute = hourly * buy.duration_hours;
    const { fee } = splitFee(compute);
    const leaseId = newId('lse_');

    let clusterId: string;
    let sellerAccountId: string;
    let nodes: { id: string; hostname: string }[];
    let sourceLeaseId: string | null = null;
    const isResale = group.clusterId.startsWith('lse_');
    const resold = isResale ? this.leases.get(group.clusterId) : undefined;
    // A resale sells the whole live lease (D27): it is all-or-nothing in the
    // engine and cancelled when its lease ends, so anything else is a bug.
    if (isResale && (resold === undefined || group.nodes !== resold.nodes.length)) {
      throw new Error(
        `resale of ${group.clusterId} filled ${group.nodes} nodes; the lease has ${resold?.nodes.length ?? 'none'} live`,
      );
    }
    if (resold !== undefined) {
      // D27: the buyer takes over the resold lease's nodes from now on.
      clusterId = resold.row.cluster_id;
      sellerAccountId = resold.row.account_id;
      nodes = resold.nodes.map((n) => ({ id: n.node_id, hostname: n.hostname }));
      sourceLeaseId = resold.row.id;
      this.resold(resold, at, buy.duration_hours * HOUR_MS);
    } else {
      const cluster = this.cluster(group.clusterId);
      clusterId = cluster.id;
      sellerAccountId = cluster.providerAccountId;
      // Round the cluster from where the last lease ended, so a cluster
      // mostly leased is not searched from its first node every time.
      nodes = [];
      const all = cluster.nodes;
      const from = cluster.nextFree;
      for (let k = 0; k < all.length && nodes.length < group.nodes; k++) {
        const i = (from + k) % all.length;
        const n = all[i]!;
        if (n.status !== 'offline' && !cluster.leased.has(n.id)) {
          nodes.push(n);
          cluster.nextFree = i + 1;
        }
      }
      if (nodes.length < group.nodes) {
        // freeNodes() is checked before every sell enters the book, so this is a bug.
        throw new Error(`cluster ${cluster.id} has fewer free nodes than its sells offered`);
      }
      cluster.openSellNodes -= group.nodes;
    }
    const cluster = this.cluster(clusterId);
    for (const n of nodes) cluster.leased.set(n.id, leaseId);

    const row: LeaseRow = {
      id: leaseId,
      account_id: buy.account_id,
      organization_id: buy.organization_id,
      buy_order_id: buy.id,
      seller_account_id: sellerAccountId,
      cluster_id: clusterId,
      gpu_type: this.gpuType,
      zone: this.zone,
      gpu_count: gpus,
      hourly_cents: hourly,
      compute_cents: compute,
      fee_cents: fee,
      start_ms: at,
      end_ms: at + buy.duration_hours * HOUR_MS,
      created_ms: at,
      status: 'provisioning',
      ended_ms: null,
      end_reason: null,
      refund_cents: null,
      source_lease_id: sourceLeaseId,
      ready_ms: null,
    };
    const nodeRows = nodes.map((n) => ({ lease_id: leaseId, node_id: n.id, hostname: n.hostname }));
    this.leases.set(leaseId, { row, nodes: nodeRows, resaleOrderId: null });
    this.cs.lease(row);
    this.cs.leaseNodes.push(...nodeRows);

    for (const f of group.fills) {
      const sell = this.orderRow(f.sellOrderId);
      sell.filled_gpus += f.nodes * GPUS_PER_NODE;
      sell.filled_ms = at;
      this.touched.add(sell.id);
      buy.filled_gpus += f.nodes * GPUS_PER_NODE;
      buy.filled_ms = at;
      const fill: FillRow = {
        id: newId('trd_'),
        gpu_type: this.gpuType,
        zone: this.zone,
        buy_order_id: buy.id,
        sell_order_id: sell.id,
        lease_id: leaseId,
        gpus: f.nodes * GPUS_PER_NODE,
        price_cents: f.price,
        hours: buy.duration_hours,
        at_ms: at,
        book_seq: ++this.fillSeq,
      };
      this.cs.fills.push(fill);
      this.newFills.push(fill);
    }
    // D2: the buyer pays compute + fee, the seller gets compute − fee.
    this.cs.post({
      id: newId('txn_'),
      kind: 'lease_charge',
      orderId: buy.id,
      leaseId,
      postings: fillPostings(buy.account_id, sellerAccountId, compute),
    });
    this.cs.outbox.push({
      event_id: newId('evt_'),
      subject: SUBJECTS.leaseProvision(clusterId),
      payload: {
        lease_id: leaseId,
        cluster_id: clusterId,
        account_id: buy.account_id,
        namespace: leaseNamespace(leaseId),
        nodes: nodeRows.map((n) => n.hostname),
        gpu_count: gpus,
        start_ms: row.start_ms,
        end_ms: row.end_ms,
        source_lease_id: sourceLeaseId,
      },
      created_ms: at,
    });
  }

  /**
   * D27: the resold lease ends at the transfer; its holder gets back the
   * original rate for the hours nobody uses (the rest after the buyer's
   * lease), reversed from the seller who was paid for them.
   */
  private resold(live: LiveLease, at: number, soldMs: number): void {
    const unusedMs = Math.max(0, live.row.end_ms - at - soldMs);
    const refund = mulDivHalfEven([live.row.hourly_cents, unusedMs], HOUR_MS);
    this.refund(live.row, refund, 'resale_refund');
    // The nodes move to the new lease, so they are not freed here.
    const cluster = this.cluster(live.row.cluster_id);
    for (const n of live.nodes) cluster.leased.delete(n.node_id);
    live.row.status = 'terminated';
    live.row.ended_ms = at;
    live.row.end_reason = 'resold';
    live.row.refund_cents = refund;
    live.resaleOrderId = null;
    this.leases.delete(live.row.id);
    this.cs.lease(live.row);
    this.revokeEvent(live, 'resold', at);
  }

  /**
   * Credit `cents` of unused time to the lease's holder, taken back from
   * whoever was paid for it: the seller's share and the platform's fee on it.
   */
  private refund(l: LeaseRow, cents: number, kind: string): void {
    if (cents <= 0) return;
    const { fee, payout } = splitFee(cents);
    const postings: Posting[] = [
      { accountId: l.account_id, kind: 'refund', amountCents: cents },
      { accountId: l.seller_account_id, kind: 'refund_reversal', amountCents: -payout },
      { accountId: PLATFORM_ACCOUNT_ID, kind: 'fee_refund', amountCents: -fee },
    ];
    this.cs.post({
      id: newId('txn_'),
      kind,
      orderId: l.buy_order_id,
      leaseId: l.id,
      postings: postings.filter((p) => p.amountCents !== 0),
    });
  }

  /** D25: the provider could not provision in time: everything the buyer paid comes back. */
  private failLease(live: LiveLease, at: number): void {
    const l = live.row;
    const postings: Posting[] = [
      { accountId: l.account_id, kind: 'refund', amountCents: l.compute_cents + l.fee_cents },
      {
        accountId: l.seller_account_id,
        kind: 'refund_reversal',
        amountCents: -(l.compute_cents - l.fee_cents),
      },
      { accountId: PLATFORM_ACCOUNT_ID, kind: 'fee_refund', amountCents: -2 * l.fee_cents },
    ];
    this.cs.post({
      id: newId('txn_'),
      kind: 'lease_failed',
      orderId: l.buy_order_id,
      leaseId: l.id,
      postings: postings.filter((p) => p.amountCents !== 0),
    });
    this.endLease(live, 'failed', 'failed', at, l.compute_cents + l.fee_cents, 'lease_terminated');
  }

  private endLease(
    live: LiveLease,
    status: 'terminated' | 'expired' | 'failed',
    reason: 'terminated' | 'expired' | 'failed',
    at: number,
    refundCents: number | null,
    resaleCancelReason: CancelReason,
  ): void {
    const l = live.row;
    l.status = status;
    l.ended_ms = at;
    l.end_reason = reason;
    l.refund_cents = refundCents;
    const cluster = this.cluster(l.cluster_id);
    for (const n of live.nodes) {
      if (cluster.leased.get(n.node_id) === l.id) cluster.leased.delete(n.node_id);
    }
    this.leases.delete(l.id);
    this.cs.lease(l);
    // D26: a pending resale of the lease goes with it.
    if (live.resaleOrderId !== null) {
      const orderId = live.resaleOrderId;
      this.reasonOverride.set(orderId, resaleCancelReason);
      this.handle(this.book.cancel(orderId, at).events);
    }
    this.revokeEvent(live, reason, at);
  }

  private revokeEvent(
    live: LiveLease,
    reason: 'terminated' | 'expired' | 'failed' | 'resold',
    at: number,
  ): void {
    this.cs.outbox.push({
      event_id: newId('evt_'),
      subject: SUBJECTS.leaseRevoke(live.row.cluster_id),
      payload: {
        lease_id: live.row.id,
        cluster_id: live.row.cluster_id,
        namespace: leaseNamespace(live.row.id),
        nodes: live.nodes.map((n) => n.hostname),
        reason,
        at_ms: at,
      },
      created_ms: at,
    });
  }
}

function isOf(f: FillRow, orderId: string): boolean {
  return f.buy_order_id === orderId || f.sell_order_id === orderId;
}
