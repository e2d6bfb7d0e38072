// References the database no longer checks row by row on the order path
// (migration 0006): every row of orders, leases, lease_nodes, fills and
// ledger entries must
// point at rows that exist. The books' single writers keep this true; this
// finds any row that does not, for tests and for operators
// (docs/persistence.md).

import type { Queryable } from '../db/database.js';

/** One query per reference: [what, the referring row's id, the id it names]. */
const CHECKS: readonly (readonly [string, string])[] = [
  [
    'orders.account_id',
    'SELECT o.id, o.account_id AS ref FROM orders o LEFT JOIN accounts a ON a.id = o.account_id WHERE a.id IS NULL',
  ],
  [
    'orders.organization_id',
    'SELECT o.id, o.organization_id AS ref FROM orders o LEFT JOIN organizations g ON g.id = o.organization_id WHERE g.id IS NULL',
  ],
  [
    'orders.cluster_id',
    'SELECT o.id, o.cluster_id AS ref FROM orders o LEFT JOIN clusters c ON c.id = o.cluster_id WHERE o.cluster_id IS NOT NULL AND c.id IS NULL',
  ],
  [
    'orders.resale_lease_id',
    'SELECT o.id, o.resale_lease_id AS ref FROM orders o LEFT JOIN leases l ON l.id = o.resale_lease_id WHERE o.resale_lease_id IS NOT NULL AND l.id IS NULL',
  ],
  [
    'leases.account_id',
    'SELECT l.id, l.account_id AS ref FROM leases l LEFT JOIN accounts a ON a.id = l.account_id WHERE a.id IS NULL',
  ],
  [
    'leases.organization_id',
    'SELECT l.id, l.organization_id AS ref FROM leases l LEFT JOIN organizations g ON g.id = l.organization_id WHERE g.id IS NULL',
  ],
  [
    'leases.seller_account_id',
    'SELECT l.id, l.seller_account_id AS ref FROM leases l LEFT JOIN accounts a ON a.id = l.seller_account_id WHERE a.id IS NULL',
  ],
  [
    'leases.buy_order_id',
    'SELECT l.id, l.buy_order_id AS ref FROM leases l LEFT JOIN orders o ON o.id = l.buy_order_id WHERE o.id IS NULL',
  ],
  [
    'leases.cluster_id',
    'SELECT l.id, l.cluster_id AS ref FROM leases l LEFT JOIN clusters c ON c.id = l.cluster_id WHERE c.id IS NULL',
  ],
  [
    'leases.source_lease_id',
    'SELECT l.id, l.source_lease_id AS ref FROM leases l LEFT JOIN leases s ON s.id = l.source_lease_id WHERE l.source_lease_id IS NOT NULL AND s.id IS NULL',
  ],
  [
    'lease_nodes.lease_id',
    'SELECT n.node_id AS id, n.lease_id AS ref FROM lease_nodes n LEFT JOIN leases l ON l.id = n.lease_id WHERE l.id IS NULL',
  ],
  [
    'lease_nodes.node_id',
    'SELECT n.lease_id AS id, n.node_id AS ref FROM lease_nodes n LEFT JOIN nodes x ON x.id = n.node_id WHERE x.id IS NULL',
  ],
  [
    'fills.buy_order_id',
    'SELECT f.id, f.buy_order_id AS ref FROM fills f LEFT JOIN orders o ON o.id = f.buy_order_id WHERE o.id IS NULL',
  ],
  [
    'fills.sell_order_id',
    'SELECT f.id, f.sell_order_id AS ref FROM fills f LEFT JOIN orders o ON o.id = f.sell_order_id WHERE o.id IS NULL',
  ],
  [
    'fills.lease_id',
    'SELECT f.id, f.lease_id AS ref FROM fills f LEFT JOIN leases l ON l.id = f.lease_id WHERE l.id IS NULL',
  ],
  [
    'ledger_transactions.order_id',
    'SELECT t.id, t.order_id AS ref FROM ledger_transactions t LEFT JOIN orders o ON o.id = t.order_id WHERE t.order_id IS NOT NULL AND o.id IS NULL',
  ],
  [
    'ledger_transactions.lease_id',
    'SELECT t.id, t.lease_id AS ref FROM ledger_transactions t LEFT JOIN leases l ON l.id = t.lease_id WHERE t.lease_id IS NOT NULL AND l.id IS NULL',
  ],
];

export interface DanglingReference {
  /** table.column */
  readonly reference: string;
  readonly id: string;
  /** The id it names, which does not exist. */
  readonly ref: string;
}

/** Every row (up to 10 per reference) that names a row that does not exist; [] when all is well. */
export async function danglingReferences(db: Queryable): Promise<DanglingReference[]> {
  const out: DanglingReference[] = [];
  for (const [reference, sql] of CHECKS) {
    const rows = await db.query<{ id: string; ref: string }>(`${sql} LIMIT 10`);
    for (const r of rows) out.push({ reference, id: r.id, ref: r.ref });
  }
  return out;
}
