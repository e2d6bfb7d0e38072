// What one batch of a book's commands changed, written to PostgreSQL as ONE
// statement: data-modifying CTEs, one per table, each row set passed as one
// JSON parameter (json_populate_recordset). One statement is one
// transaction (autocommit): all of it or none of it is written, and the
// ledger's balance trigger checks it (migration 0006, docs/persistence.md).
// One round trip whatever the batch size; only the tables with rows are in
// the statement, and each of its few texts stays prepared on each connection.

import type { Queryable } from '../db/database.js';
import { assertBalanced } from '../ledger/ledger.js';
import type { LedgerTransaction } from '../ledger/ledger.js';
import { LEASE_MUTABLE_COLUMNS, ORDER_COLUMNS, ORDER_MUTABLE_COLUMNS } from './rows.js';
import type { FillRow, LeaseNodeRow, LeaseRow, OrderRow, OutboxRow } from './rows.js';

const set = (cols: readonly string[]): string => cols.map((c) => `${c} = EXCLUDED.${c}`).join(', ');

/** Every batch statement starts with this comment (it shows in pg_stat_activity). */
export const WRITE_BATCH_MARK = '/* gpux:write-batch */';

/** One CTE per table, `$` standing for its parameter's number. */
const PARTS: readonly string[] = [
  `INSERT INTO orders (${ORDER_COLUMNS.join(', ')})
    SELECT ${ORDER_COLUMNS.join(', ')} FROM json_populate_recordset(NULL::orders, $::json)
    ON CONFLICT (id) DO UPDATE SET ${set(ORDER_MUTABLE_COLUMNS)}`,
  `INSERT INTO leases SELECT * FROM json_populate_recordset(NULL::leases, $::json)
    ON CONFLICT (id) DO UPDATE SET ${set(LEASE_MUTABLE_COLUMNS)}`,
  `INSERT INTO lease_nodes SELECT * FROM json_populate_recordset(NULL::lease_nodes, $::json)`,
  `INSERT INTO fills SELECT * FROM json_populate_recordset(NULL::fills, $::json)`,
  `INSERT INTO ledger_transactions (id, kind, order_id, lease_id)
    SELECT id, kind, order_id, lease_id
      FROM json_to_recordset($::json) AS t(id text, kind text, order_id text, lease_id text)`,
  `INSERT INTO ledger_entries (transaction_id, account_id, kind, amount_cents)
    SELECT transaction_id, account_id, kind, amount_cents
      FROM json_to_recordset($::json)
        AS e(transaction_id text, account_id text, kind text, amount_cents bigint)`,
  `INSERT INTO outbox (event_id, subject, payload, created_ms)
    SELECT event_id, subject, payload, created_ms
      FROM json_to_recordset($::json)
        AS x(event_id text, subject text, payload json, created_ms bigint)`,
];

const statements = new Map<number, string>();

/**
 * The batch statement for the tables with rows (bit i of `mask`: PARTS[i]),
 * their parameters numbered in PARTS order. At most 127 texts, each prepared
 * once per connection; a batch that only rests an order writes one table.
 */
export function writeBatchSql(mask: number): string {
  let sql = statements.get(mask);
  if (sql === undefined) {
    const ctes: string[] = [];
    PARTS.forEach((part, i) => {
      if ((mask & (1 << i)) !== 0)
        ctes.push(`w${i} AS (${part.replace('$', `$${ctes.length + 1}`)})`);
    });
    sql = `${WRITE_BATCH_MARK}\nWITH ${ctes.join(',\n  ')}\nSELECT 1`;
    statements.set(mask, sql);
  }
  return sql;
}

export class ChangeSet {
  /** Rows to insert or update, by id; the last state of the batch wins. */
  readonly orders = new Map<string, OrderRow>();
  readonly leases = new Map<string, LeaseRow>();
  readonly leaseNodes: LeaseNodeRow[] = [];
  readonly fills: FillRow[] = [];
  readonly ledger: LedgerTransaction[] = [];
  readonly outbox: OutboxRow[] = [];

  get empty(): boolean {
    return (
      this.orders.size === 0 &&
      this.leases.size === 0 &&
      this.fills.length === 0 &&
      this.ledger.length === 0 &&
      this.outbox.length === 0
    );
  }

  /** One change set with the rows of all of `sets` (books' batches committed together). */
  static merge(sets: readonly ChangeSet[]): ChangeSet {
    if (sets.length === 1 && sets[0] !== undefined) return sets[0];
    const all = new ChangeSet();
    for (const s of sets) {
      for (const [id, r] of s.orders) all.orders.set(id, r);
      for (const [id, r] of s.leases) all.leases.set(id, r);
      all.leaseNodes.push(...s.leaseNodes);
      all.fills.push(...s.fills);
      all.ledger.push(...s.ledger);
      all.outbox.push(...s.outbox);
    }
    return all;
  }

  order(r: OrderRow): void {
    this.orders.set(r.id, r);
  }

  lease(r: LeaseRow): void {
    this.leases.set(r.id, r);
  }

  post(t: LedgerTransaction): void {
    assertBalanced(t.postings);
    this.ledger.push(t);
  }

  /**
   * Write everything in one statement (see the top of this file). Rows are
   * copied to JSON now, so later changes to the in-memory rows cannot leak
   * into this batch.
   */
  async write(q: Queryable): Promise<void> {
    const entries = this.ledger.flatMap((t) =>
      t.postings.map((p) => ({
        transaction_id: t.id,
        account_id: p.accountId,
        kind: p.kind,
        amount_cents: p.amountCents,
      })),
    );
    const parts: readonly (readonly unknown[])[] = [
      [...this.orders.values()],
      [...this.leases.values()],
      this.leaseNodes,
      this.fills,
      this.ledger.map((t) => ({
        id: t.id,
        kind: t.kind,
        order_id: t.orderId ?? null,
        lease_id: t.leaseId ?? null,
      })),
      entries,
      this.outbox,
    ];
    let mask = 0;
    const params: string[] = [];
    parts.forEach((rows, i) => {
      if (rows.length === 0) return;
      mask |= 1 << i;
      params.push(json(rows));
    });
    if (mask === 0) return;
    await q.query(writeBatchSql(mask), params, { name: `gpux_write_batch_${mask}` });
  }
}

function json(rows: readonly unknown[]): string {
  return JSON.stringify(rows);
}
