// The core of a book's state (book-state.ts): what one book owns in memory
// and how the matching engine's events become rows. Commands (BookState)
// run through command(): what they change is recorded in the running
// ChangeSet, the orders they touch are synced into their rows at the end,
// fills become leases (book-leases.ts), cancels release capacity and credit.
//
// Order rules: D3 (credit holds), D9-D17 (the engine), D31 (capacity).

import { GPUS_PER_NODE, InvariantError } from '@gpux/shared';
import type { CancelReason, GpuType, Zone } from '@gpux/shared';

import { cancelEvent } from '../account-events/events.js';
import { holdAfter } from '../orders/credit.js';
import { leaseGroups } from '../matching/index.js';
import type { BookEvent, Fill, OrderBook } from '../matching/index.js';
import { BookLeases } from './book-leases.js';
import type { LeaseHost, LiveLease } from './book-leases.js';
import type { ClusterState } from './capacity.js';
import type { ChangeSet } from './change-set.js';
import { statusOf, syncBookColumns } from './rows.js';
import type { FillRow, OrderRow } from './rows.js';

export interface BookStateOptions {
  /** D25: a lease still provisioning after this long fails, refunded in full. */
  readonly provisioningTimeoutMs: number;
}

export abstract class BookCore implements LeaseHost {
  /** Open orders by id (resting, scheduled, unseen). */
  readonly orders = new Map<string, OrderRow>();
  readonly clusters = new Map<string, ClusterState>();
  /** Open buys holding credit (D3, orders/credit.ts): order id → the hold. */
  readonly holds = new Map<string, number>();
  protected readonly leaseBook: BookLeases;
  /** When an operator halted the book (ms), or null (issue 21, docs/api/admin.md "Books"). */
  protected halted: number | null = null;

  // The running command.
  private current: ChangeSet | null = null;
  protected touched = new Set<string>();
  protected newFills: FillRow[] = [];
  /** Cancellations the exchange caused, whose reason is not the engine's "user". */
  private reasonOverride = new Map<string, CancelReason>();

  constructor(
    readonly gpuType: GpuType,
    readonly zone: Zone,
    readonly book: OrderBook,
    fillSeq: number,
    options: BookStateOptions,
  ) {
    this.leaseBook = new BookLeases(
      gpuType,
      zone,
      this.clusters,
      fillSeq,
      options.provisioningTimeoutMs,
    );
  }

  /**
   * Orders the book accepted and cancellations it made since this process
   * opened it (gpux_orders_total, gpux_cancels_total): plain numbers, read
   * when /metrics is scraped; a rebuilt state takes over its writer's.
   */
  tally = { placed: 0, cancelled: 0 };

  /** The book's live leases by id. */
  get leases(): Map<string, LiveLease> {
    return this.leaseBook.live;
  }

  get haltedAt(): number | null {
    return this.halted;
  }

  /** The last fill's number in this book (fills.book_seq). */
  get fillSeq(): number {
    return this.leaseBook.fillSeq;
  }

  /** Run one command: its changes go to `changes`, touched orders are synced at the end. */
  protected command<T>(changes: ChangeSet, run: () => T): T {
    this.current = changes;
    this.touched = new Set();
    this.newFills = [];
    this.reasonOverride = new Map();
    try {
      const result = run();
      this.finish();
      return result;
    } finally {
      this.current = null;
    }
  }

  /** The running command's change set. */
  get changes(): ChangeSet {
    if (this.current === null) throw new InvariantError('no command is running');
    return this.current;
  }

  touch(orderId: string): void {
    this.touched.add(orderId);
  }

  filled(fill: FillRow): void {
    this.changes.fills.push(fill);
    this.newFills.push(fill);
  }

  withdrawResale(orderId: string, reason: CancelReason, at: number): void {
    this.withdraw(orderId, reason, at);
  }

  /** Take an open order out of the book for a reason of the exchange's (D12). */
  protected withdraw(orderId: string, reason: CancelReason, at: number): boolean {
    this.reasonOverride.set(orderId, reason);
    const result = this.book.cancel(orderId, at);
    this.handle(result.events);
    return result.ok;
  }

  protected cluster(id: string): ClusterState {
    const c = this.clusters.get(id);
    if (c === undefined) {
      throw new InvariantError(`cluster ${id} is not loaded in book ${this.gpuType}/${this.zone}`);
    }
    return c;
  }

  protected advance(now: number): void {
    this.handle(this.book.advance(now));
    this.leaseBook.advance(this, now);
  }

  /** Sync every order the command touched into its row and the change set. */
  protected finish(): void {
    for (const id of this.touched) {
      const row = this.orders.get(id);
      if (row === undefined) continue;
      const oo = this.book.openOrder(id);
      syncBookColumns(row, oo);
      row.status = statusOf(row);
      this.changes.order(row);
      if (oo === undefined) this.orders.delete(id);
      if (this.holds.size > 0) this.syncHold(row, oo === undefined);
    }
    this.touched.clear();
  }

  /** D3: a held buy's hold follows what it has left; it goes when the buy closes. */
  protected syncHold(row: OrderRow, closed: boolean): void {
    const held = this.holds.get(row.id);
    if (held === undefined) return;
    const next = holdAfter(row, held, closed);
    if (next === undefined) return;
    if (next === 0) this.holds.delete(row.id);
    else this.holds.set(row.id, next);
    this.changes.hold(row.id, next);
  }

  protected handle(events: readonly BookEvent[]): void {
    for (const ev of events) {
      switch (ev.type) {
        case 'rested':
          this.touched.add(ev.orderId);
          break;
        case 'matched':
          this.matched(ev.buyOrderId, ev.fills, ev.at);
          break;
        case 'cancelled':
          this.cancelled(ev.orderId, ev.nodes, ev.reason, ev.at);
          break;
      }
    }
  }

  private cancelled(orderId: string, nodes: number, reason: CancelReason, at: number): void {
    const row = this.orderRow(orderId);
    row.cancelled_gpus += nodes * GPUS_PER_NODE;
    row.cancel_reason = this.reasonOverride.get(orderId) ?? reason;
    row.cancelled_ms = at;
    this.changes.event(cancelEvent(row, row.cancel_reason, at));
    this.tally.cancelled++;
    this.touched.add(orderId);
    if (row.side !== 'sell') return;
    if (row.resale_lease_id !== null) {
      const lease = this.leases.get(row.resale_lease_id);
      if (lease !== undefined && lease.resaleOrderId === row.id) lease.resaleOrderId = null;
    } else if (row.cluster_id !== null) {
      this.cluster(row.cluster_id).openSellNodes -= nodes;
    }
  }

  orderRow(id: string): OrderRow {
    const row = this.orders.get(id);
    if (row === undefined) throw new InvariantError(`book event for unknown order ${id}`);
    return row;
  }

  /** One matching step (D11): one lease per cluster (or per resold lease). */
  private matched(buyOrderId: string, fills: readonly Fill[], at: number): void {
    const buy = this.orderRow(buyOrderId);
    this.touched.add(buyOrderId);
    for (const group of leaseGroups(fills)) this.leaseBook.create(this, buy, group, at);
  }
}
