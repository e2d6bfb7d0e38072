// The live leases of one book and everything that happens to them after a
// fill: creation from a matching step (D11), the charge (D2), the provision
// and revoke events (D29), termination with its refund (D26), resale
// transfer (D27), expiry, and failure with the full refund (D25). Part of
// BookState: its methods run inside a BookState command, which hands them
// the command's change set and order rows (LeaseHost).
//
// D27, a resale matched before its available_from: the buyer's lease is
// made (and paid) at the match but starts at transfer_time; its provision
// event is written when it starts (opened_ms). The reseller keeps access
// until then (transfer_ms), unless it asked to transfer immediately: then its
// access ends at the match. Both happen on the book's own timer (advance).

import { GPUS_PER_NODE, HOUR_MS, InvariantError, newId, splitFee } from '@gpux/shared';
import type { CancelReason, GpuType, LeaseRevokeEvent, Zone } from '@gpux/shared';

import type { Posting, TransactionKind } from '../ledger/ledger.js';
import { failurePostings, fillPostings, refundPostings } from '../ledger/postings.js';
import { originalRefundCents, refundAt } from '../leases/lease-money.js';
import type { Refund } from '../leases/lease-money.js';
import type { LeaseGroup } from '../matching/index.js';
import { takeFreeNodes } from './capacity.js';
import type { ClusterState } from './capacity.js';
import { fillEvent, leaseEvent } from '../account-events/events.js';
import type { ChangeSet } from './change-set.js';
import { provisionEvent, revokeEvent } from './lease-events.js';
import type { OperatorLeaseOutcome } from './outcomes.js';
import { refuse } from './refusal.js';
import type { Refusal } from './refusal.js';
import type { FillRow, LeaseNodeRow, LeaseRow, OrderRow } from './rows.js';

export interface LiveLease {
  readonly row: LeaseRow;
  nodes: LeaseNodeRow[];
  /** Its pending resell order, if any (D27). */
  resaleOrderId: string | null;
}

/** What the running BookState command lends the leases. */
export interface LeaseHost {
  readonly changes: ChangeSet;
  orderRow(id: string): OrderRow;
  /** The order's row changed: it is synced when the command ends. */
  touch(orderId: string): void;
  /** A fill this command made (the command's outcome lists it). */
  filled(fill: FillRow): void;
  /** Take a lease's pending resale out of the book, for `reason` (D26). */
  withdrawResale(orderId: string, reason: CancelReason, at: number): void;
}

export class BookLeases {
  readonly live = new Map<string, LiveLease>();

  constructor(
    private readonly gpuType: GpuType,
    private readonly zone: Zone,
    private readonly clusters: ReadonlyMap<string, ClusterState>,
    /** The last fill's number in this book (fills.book_seq). */
    public fillSeq: number,
    private readonly provisioningTimeoutMs: number,
  ) {}

  private cluster(id: string): ClusterState {
    const c = this.clusters.get(id);
    if (c === undefined) {
      throw new InvariantError(`cluster ${id} is not loaded in book ${this.gpuType}/${this.zone}`);
    }
    return c;
  }

  /** One lease of a matching step (D11): the nodes of one cluster, or of one lease resold whole. */
  create(host: LeaseHost, buy: OrderRow, group: LeaseGroup, at: number): void {
    const gpus = group.nodes * GPUS_PER_NODE;
    let hourly = 0;
    for (const f of group.fills) hourly += f.price * f.nodes * GPUS_PER_NODE;
    const compute = hourly * buy.duration_hours;
    const leaseId = newId('lse_');
    // D27: the lease of a resale matched before its window starts starts later.
    const start = Math.max(at, group.leaseStartAt);
    const { clusterId, sellerAccountId, nodes, sourceLeaseId } = this.nodesFor(
      host,
      buy,
      group,
      at,
      start,
    );
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
      fee_cents: splitFee(compute).fee,
      start_ms: start,
      end_ms: start + buy.duration_hours * HOUR_MS,
      created_ms: at,
      status: 'provisioning',
      ended_ms: null,
      end_reason: null,
      refund_cents: null,
      source_lease_id: sourceLeaseId,
      ready_ms: null,
      transfer_ms: null,
      opened_ms: null,
    };
    const nodeRows = nodes.map((n) => ({ lease_id: leaseId, node_id: n.id, hostname: n.hostname }));
    const live: LiveLease = { row, nodes: nodeRows, resaleOrderId: null };
    this.live.set(leaseId, live);
    const cs = host.changes;
    cs.lease(row);
    cs.leaseNodes.push(...nodeRows);
    // D32: the buyer's SSH keys of this moment, copied by the same batch.
    cs.keySnapshots.push({ lease_id: leaseId, account_id: buy.account_id });

    for (const f of group.fills) {
      const sell = host.orderRow(f.sellOrderId);
      sell.filled_gpus += f.nodes * GPUS_PER_NODE;
      sell.filled_ms = at;
      host.touch(sell.id);
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
      host.filled(fill);
      cs.event(fillEvent(buy, fill), fillEvent(sell, fill));
    }
    cs.event(leaseEvent(row, 'lease.provisioning', at));
    this.post(cs, 'lease_charge', row, fillPostings(buy.account_id, sellerAccountId, compute), at);
    if (start <= at) this.open(cs, live);
  }

  /** The lease starts: its provision event is written (D29). */
  private open(cs: ChangeSet, live: LiveLease): void {
    live.row.opened_ms = live.row.start_ms;
    cs.lease(live.row);
    cs.outbox.push(provisionEvent(live.row, live.nodes));
  }

  /** Where a lease's nodes come from: a provider's cluster, or a lease resold whole (D27). */
  private nodesFor(
    host: LeaseHost,
    buy: OrderRow,
    group: LeaseGroup,
    at: number,
    start: number,
  ): {
    clusterId: string;
    sellerAccountId: string;
    nodes: { id: string; hostname: string }[];
    sourceLeaseId: string | null;
  } {
    const first = group.fills[0];
    const sell = first === undefined ? undefined : host.orderRow(first.sellOrderId);
    if (sell?.resale_lease_id != null) {
      const resold = this.live.get(sell.resale_lease_id);
      // A resale sells the whole live lease (D27): all-or-nothing in the
      // engine and cancelled when its lease ends, so anything else is a bug.
      if (resold === undefined || group.nodes !== resold.nodes.length) {
        throw new InvariantError(
          `resale of ${sell.resale_lease_id} filled ${group.nodes} nodes; the lease has ${resold?.nodes.length ?? 'none'} live`,
        );
      }
      const sold = host.orderRow(sell.id);
      this.sell(
        host.changes,
        resold,
        at,
        start,
        buy.duration_hours * HOUR_MS,
        sold.transfer_immediately === true,
      );
      return {
        clusterId: resold.row.cluster_id,
        sellerAccountId: resold.row.account_id,
        nodes: resold.nodes.map((n) => ({ id: n.node_id, hostname: n.hostname })),
        sourceLeaseId: resold.row.id,
      };
    }
    const cluster = this.cluster(group.clusterId);
    return {
      clusterId: cluster.id,
      sellerAccountId: cluster.providerAccountId,
      nodes: takeFreeNodes(cluster, group.nodes),
      sourceLeaseId: null,
    };
  }

  /** D26: terminate now; the rest of the lease is refunded. */
  terminate(host: LeaseHost, live: LiveLease, now: number): Refund {
    const l = live.row;
    const refund = refundAt(l, now);
    this.post(
      host.changes,
      'lease_refund',
      l,
      refundPostings(l.account_id, l.seller_account_id, refund.refundCents),
      now,
    );
    this.end(host, live, 'terminated', now, refund.refundCents, 'lease_terminated');
    return refund;
  }

  /** The agent reported the lease provisioned (D25): provisioning → active. */
  ready(leaseId: string, now: number, changes: ChangeSet): boolean {
    const live = this.live.get(leaseId);
    // A lease bought ahead of its transfer cannot be provisioned before it starts.
    if (live === undefined || live.row.status !== 'provisioning' || live.row.opened_ms === null) {
      return false;
    }
    live.row.status = 'active';
    live.row.ready_ms = now;
    changes.lease(live.row);
    changes.event(leaseEvent(live.row, 'lease.active', now));
    return true;
  }

  /**
   * Time passes: sold leases hand their nodes over at transfer_time and
   * leases bought ahead start (D27), leases end at their end, and a lease
   * not provisioned within the timeout of its start fails (D25).
   */
  advance(host: LeaseHost, now: number): void {
    const cs = host.changes;
    for (const live of [...this.live.values()]) {
      const l = live.row;
      if (l.transfer_ms !== null && l.transfer_ms <= now) this.transfer(cs, live);
    }
    for (const live of [...this.live.values()]) {
      const l = live.row;
      if (l.opened_ms === null) {
        if (l.start_ms > now) continue;
        this.open(cs, live);
      }
      if (l.end_ms <= now) {
        this.end(host, live, 'expired', l.end_ms, null, 'expired');
      } else if (l.status === 'provisioning' && l.start_ms + this.provisioningTimeoutMs <= now) {
        this.fail(host, live, l.start_ms + this.provisioningTimeoutMs);
      }
    }
  }

  /** D27: a lease sold ahead and not yet handed over (its holder may not terminate it). */
  static soldAhead(live: LiveLease): boolean {
    return live.row.transfer_ms !== null;
  }

  /** D27: the refusal of ending a lease sold ahead, which is the buyer's from its transfer. */
  static soldAheadRefusal(live: LiveLease): Refusal | undefined {
    if (!BookLeases.soldAhead(live)) return undefined;
    return refuse(
      'lease_not_active',
      `lease ${live.row.id} is sold: its access ends at the transfer, ${new Date(live.row.transfer_ms ?? 0).toISOString()}`,
    );
  }

  /**
   * An operator ends a live lease, whoever holds it (docs/api/admin.md):
   * `fail` a lease still provisioning, with D25's full refund, as the
   * provisioning timeout does (refused lease_not_provisioning otherwise);
   * `revoke` a provisioning or active one, with D26's refund of the rest, as
   * a termination does. Either way the agent is told to revoke its access.
   * A lease sold ahead (D27) is refused.
   */
  operatorEnd(
    host: LeaseHost,
    live: LiveLease,
    action: 'fail' | 'revoke',
    now: number,
  ): OperatorLeaseOutcome {
    const sold = BookLeases.soldAheadRefusal(live);
    if (sold !== undefined) return sold;
    const before = { ...live.row };
    if (action === 'fail') {
      if (live.row.status !== 'provisioning') {
        return refuse(
          'lease_not_provisioning',
          `lease ${live.row.id} is ${live.row.status}, not provisioning: revoke it instead`,
        );
      }
      this.fail(host, live, now);
    } else {
      this.terminate(host, live, now);
    }
    return { ok: true, before, lease: { ...live.row } };
  }

  /** D25: the provider could not provision the lease: everything the buyer paid comes back. */
  fail(host: LeaseHost, live: LiveLease, at: number): void {
    const l = live.row;
    this.post(
      host.changes,
      'lease_failed',
      l,
      failurePostings(l.account_id, l.seller_account_id, l.compute_cents, l.fee_cents),
      at,
    );
    this.end(host, live, 'failed', at, l.compute_cents + l.fee_cents, 'lease_terminated');
  }

  /** Record a ledger transaction of the lease (nothing when there are no postings). */
  private post(
    cs: ChangeSet,
    kind: TransactionKind,
    l: LeaseRow,
    postings: Posting[],
    at: number,
  ): void {
    if (postings.length === 0) return;
    cs.post({ id: newId('txn_'), kind, orderId: l.buy_order_id, leaseId: l.id, postings }, at);
  }

  /**
   * D27: the lease is sold for `soldMs` from `transferAt`. Its holder gets
   * back, now, the original rate for the hours nobody uses, reversed from the
   * seller who was paid for them. Its access ends at the transfer (at once
   * when the transfer is now, or when it asked to transfer immediately). The
   * nodes move to the new lease, so they are never freed in between.
   */
  private sell(
    cs: ChangeSet,
    live: LiveLease,
    at: number,
    transferAt: number,
    soldMs: number,
    immediately: boolean,
  ): void {
    const l = live.row;
    const refund = originalRefundCents(l, transferAt, soldMs);
    this.post(
      cs,
      'resale_refund',
      l,
      refundPostings(l.account_id, l.seller_account_id, refund),
      at,
    );
    l.refund_cents = refund;
    live.resaleOrderId = null;
    l.transfer_ms = transferAt;
    cs.lease(l);
    if (transferAt <= at || immediately) this.transfer(cs, live, at);
    cs.event(leaseEvent(l, 'lease.sold', at));
  }

  /** D27: the sold lease's access ends (at its transfer, or `at`); it leaves the live leases. */
  private transfer(cs: ChangeSet, live: LiveLease, at?: number): void {
    const l = live.row;
    const when = at ?? l.transfer_ms ?? l.end_ms;
    l.status = 'terminated';
    l.ended_ms = when;
    l.end_reason = 'resold';
    this.live.delete(l.id);
    // The nodes are the buyer's lease's now (a book loaded from the database
    // may have them under this lease until the transfer).
    const cluster = this.cluster(l.cluster_id);
    const successor = [...this.live.values()].find((x) => x.row.source_lease_id === l.id);
    for (const n of live.nodes) {
      if (cluster.leased.get(n.node_id) !== l.id) continue;
      if (successor !== undefined) cluster.leased.set(n.node_id, successor.row.id);
      else cluster.leased.delete(n.node_id);
    }
    cs.lease(l);
    cs.outbox.push(revokeEvent(l, live.nodes, 'resold', when));
  }

  private end(
    host: LeaseHost,
    live: LiveLease,
    reason: Exclude<LeaseRevokeEvent['reason'], 'resold'>,
    at: number,
    refundCents: number | null,
    resaleCancelReason: CancelReason,
  ): void {
    const l = live.row;
    l.status = reason;
    l.ended_ms = at;
    l.end_reason = reason;
    l.refund_cents = refundCents;
    const cluster = this.cluster(l.cluster_id);
    // A lease bought ahead that ends before its transfer: the seller still
    // holds the nodes until then (D27).
    const source = l.source_lease_id === null ? undefined : this.live.get(l.source_lease_id);
    for (const n of live.nodes) {
      if (cluster.leased.get(n.node_id) !== l.id) continue;
      if (source !== undefined) cluster.leased.set(n.node_id, source.row.id);
      else cluster.leased.delete(n.node_id);
    }
    this.live.delete(l.id);
    host.changes.lease(l);
    host.changes.event(leaseEvent(l, `lease.${reason}`, at));
    // D26: a pending resale of the lease goes with it.
    if (live.resaleOrderId !== null)
      host.withdrawResale(live.resaleOrderId, resaleCancelReason, at);
    host.changes.outbox.push(revokeEvent(l, live.nodes, reason, at));
  }
}
