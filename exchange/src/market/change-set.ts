// What one batch of a book's commands changed, written to PostgreSQL as ONE
// statement: data-modifying CTEs, one per table, each row set passed as one
// JSON parameter (jsonb_populate_recordset). One statement is one
// transaction (autocommit): all of it or none of it is written; the foreign
// keys and the ledger's balance trigger (deferred) are checked at its end.
// One round trip whatever the batch size, and the text never changes, so it
// stays prepared on each connection.

import type { Queryable } from '../db/database.js';
import { assertBalanced } from '../ledger/ledger.js';
import type { LedgerTransaction } from '../ledger/ledger.js';
import { LEASE_MUTABLE_COLUMNS, ORDER_COLUMNS, ORDER_MUTABLE_COLUMNS } from './rows.js';
import type { FillRow, LeaseNodeRow, LeaseRow, OrderRow, OutboxRow } from './rows.js';

const set = (cols: readonly string[]): string => cols.map((c) => `${c} = EXCLUDED.${c}`).join(', ');

/** The batch statement: $1 orders, $2 leases, $3 lease nodes, $4 fills, $5 ledger transactions, $6 ledger entries, $7 outbox. */
export const WRITE_BATCH_SQL = `/* gpux:write-batch */
WITH
  o AS (
    INSERT INTO orders (${ORDER_COLUMNS.join(', ')})
    SELECT ${ORDER_COLUMNS.join(', ')} FROM jsonb_populate_recordset(NULL::orders, $1::jsonb)
    ON CONFLICT (id) DO UPDATE SET ${set(ORDER_MUTABLE_COLUMNS)}),
  l AS (
    INSERT INTO leases SELECT * FROM jsonb_populate_recordset(NULL::leases, $2::jsonb)
    ON CONFLICT (id) DO UPDATE SET ${set(LEASE_MUTABLE_COLUMNS)}),
  n AS (
    INSERT INTO lease_nodes SELECT * FROM jsonb_populate_recordset(NULL::lease_nodes, $3::jsonb)),
  f AS (
    INSERT INTO fills SELECT * FROM jsonb_populate_recordset(NULL::fills, $4::jsonb)),
  t AS (
    INSERT INTO ledger_transactions (id, kind, order_id, lease_id)
    SELECT id, kind, order_id, lease_id
      FROM jsonb_to_recordset($5::jsonb) AS t(id text, kind text, order_id text, lease_id text)),
  e AS (
    INSERT INTO ledger_entries (transaction_id, account_id, kind, amount_cents)
    SELECT transaction_id, account_id, kind, amount_cents
      FROM jsonb_to_recordset($6::jsonb)
        AS e(transaction_id text, account_id text, kind text, amount_cents bigint)),
  x AS (
    INSERT INTO outbox (event_id, subject, payload, created_ms)
    SELECT event_id, subject, payload, created_ms
      FROM jsonb_to_recordset($7::jsonb)
        AS x(event_id text, subject text, payload jsonb, created_ms bigint))
SELECT 1`;

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
    const params = [
      json([...this.orders.values()]),
      json([...this.leases.values()]),
      json(this.leaseNodes),
      json(this.fills),
      json(
        this.ledger.map((t) => ({
          id: t.id,
          kind: t.kind,
          order_id: t.orderId ?? null,
          lease_id: t.leaseId ?? null,
        })),
      ),
      json(entries),
      json(this.outbox),
    ];
    await q.query(WRITE_BATCH_SQL, params, { name: 'gpux_write_batch' });
  }
}

function json(rows: readonly unknown[]): string {
  return JSON.stringify(rows);
}
