// Reads of committed state for the API: orders, fills, leases, trades. Every
// read of an order or lease is limited to the calling account (D24).

import type { GpuType, LeaseStatus, OrderStatus, Side, Zone } from '@gpux/shared';

import type { Queryable } from '../db/database.js';
import type { FillRow, LeaseNodeRow, LeaseRow, OrderRow } from './rows.js';

export async function orderOf(
  q: Queryable,
  accountId: string,
  orderId: string,
): Promise<OrderRow | undefined> {
  const [row] = await q.query<OrderRow>('SELECT * FROM orders WHERE id = $1 AND account_id = $2', [
    orderId,
    accountId,
  ]);
  return row;
}

/** The fills of these orders (either side), oldest first, grouped by order id. */
export async function fillsOf(
  q: Queryable,
  orderIds: readonly string[],
): Promise<Map<string, FillRow[]>> {
  const out = new Map<string, FillRow[]>();
  if (orderIds.length === 0) return out;
  const rows = await q.query<FillRow>(
    `SELECT * FROM fills WHERE buy_order_id = ANY($1::text[]) OR sell_order_id = ANY($1::text[])
      ORDER BY book_seq`,
    [orderIds],
  );
  const wanted = new Set(orderIds);
  for (const f of rows) {
    for (const id of [f.buy_order_id, f.sell_order_id]) {
      if (!wanted.has(id)) continue;
      let list = out.get(id);
      if (list === undefined) out.set(id, (list = []));
      list.push(f);
    }
  }
  return out;
}

export interface OrderFilter {
  readonly status: OrderStatus | 'all';
  readonly side: Side | undefined;
  readonly limit: number;
  readonly offset: number;
}

/** D21: newest first; `total` counts every order matching the filter. */
export async function listOrders(
  q: Queryable,
  accountId: string,
  f: OrderFilter,
): Promise<{ rows: OrderRow[]; total: number }> {
  // An order's leases by its fills (fills_buy), not by scanning the account's.
  const where = `account_id = $1 AND ($2::gpux_order_status IS NULL OR status = $2) AND ($3::gpux_side IS NULL OR side = $3)`;
  const params = [accountId, f.status === 'all' ? null : f.status, f.side ?? null];
  const rows = await q.query<OrderRow>(
    `SELECT * FROM orders WHERE ${where} ORDER BY created_ms DESC, id DESC LIMIT $4 OFFSET $5`,
    [...params, f.limit, f.offset],
  );
  const [count] = await q.query<{ n: number }>(
    `SELECT COUNT(*)::bigint AS n FROM orders WHERE ${where}`,
    params,
  );
  return { rows, total: count?.n ?? 0 };
}

export async function leaseOf(
  q: Queryable,
  accountId: string,
  leaseId: string,
): Promise<LeaseRow | undefined> {
  const [row] = await q.query<LeaseRow>('SELECT * FROM leases WHERE id = $1 AND account_id = $2', [
    leaseId,
    accountId,
  ]);
  return row;
}

/** A lease's nodes by hostname (the order of its SSH users, market/lease-events.ts), with their status (D29). */
export async function leaseNodesOf(
  q: Queryable,
  leaseId: string,
): Promise<(LeaseNodeRow & { status: 'available' | 'online' | 'offline' })[]> {
  return q.query(
    `SELECT ln.*, n.status FROM lease_nodes ln JOIN nodes n ON n.id = ln.node_id
      WHERE ln.lease_id = $1 ORDER BY ln.hostname`,
    [leaseId],
  );
}

/** What the agent reported for a lease (D28, D32); undefined before its report. */
export interface LeaseAccessRow {
  ssh_endpoints: { hostname: string; endpoint: string }[];
  ssh_host_keys: string[];
  kubeconfig_sealed: Buffer | null;
  reported_ms: number;
  revoked_ms: number | null;
}

export async function leaseAccessOf(
  q: Queryable,
  leaseId: string,
): Promise<LeaseAccessRow | undefined> {
  const [row] = await q.query<LeaseAccessRow>(
    `SELECT ssh_endpoints, ssh_host_keys, kubeconfig_sealed, reported_ms, revoked_ms
       FROM lease_access WHERE lease_id = $1`,
    [leaseId],
  );
  return row;
}

export async function listLeases(
  q: Queryable,
  accountId: string,
  f: { status: LeaseStatus | 'all'; orderId?: string | undefined; limit: number; offset: number },
): Promise<{ rows: LeaseRow[]; total: number }> {
  // An order's leases by its fills (fills_buy), not by scanning the account's.
  const where = `account_id = $1 AND ($2::gpux_lease_status IS NULL OR status = $2)
    AND ($3::text IS NULL OR id IN (SELECT lease_id FROM fills WHERE buy_order_id = $3))`;
  const params = [accountId, f.status === 'all' ? null : f.status, f.orderId ?? null];
  const rows = await q.query<LeaseRow>(
    `SELECT * FROM leases WHERE ${where} ORDER BY created_ms DESC, id DESC LIMIT $4 OFFSET $5`,
    [...params, f.limit, f.offset],
  );
  const [count] = await q.query<{ n: number }>(
    `SELECT COUNT(*)::bigint AS n FROM leases WHERE ${where}`,
    params,
  );
  return { rows, total: count?.n ?? 0 };
}

/** D33: anonymous fills of a book, newest first. */
export async function listTrades(
  q: Queryable,
  gpuType: GpuType,
  zone: Zone,
  limit: number,
  offset: number,
): Promise<{ rows: FillRow[]; total: number }> {
  const rows = await q.query<FillRow>(
    `SELECT * FROM fills WHERE gpu_type = $1 AND zone = $2
      ORDER BY at_ms DESC, book_seq DESC LIMIT $3 OFFSET $4`,
    [gpuType, zone, limit, offset],
  );
  const [count] = await q.query<{ n: number }>(
    'SELECT COUNT(*)::bigint AS n FROM fills WHERE gpu_type = $1 AND zone = $2',
    [gpuType, zone],
  );
  return { rows, total: count?.n ?? 0 };
}

/** GPUs traded in a book since `sinceMs` (the order book's volume_24h). */
export async function volumeSince(
  q: Queryable,
  gpuType: GpuType,
  zone: Zone,
  sinceMs: number,
): Promise<number> {
  const [row] = await q.query<{ gpus: number }>(
    `SELECT COALESCE(SUM(gpus), 0)::bigint AS gpus FROM fills
      WHERE gpu_type = $1 AND zone = $2 AND at_ms > $3`,
    [gpuType, zone, sinceMs],
  );
  return row?.gpus ?? 0;
}
