// What one batch of a book's commands changed, written in one PostgreSQL
// transaction: a handful of statements whatever the batch size, each row set
// passed as one JSON parameter (jsonb_populate_recordset).

import type { Queryable } from '../db/database.js';
import { assertBalanced } from '../ledger/ledger.js';
import type { LedgerTransaction } from '../ledger/ledger.js';
import { LEASE_MUTABLE_COLUMNS, ORDER_COLUMNS, ORDER_MUTABLE_COLUMNS } from './rows.js';
import type { FillRow, LeaseNodeRow, LeaseRow, OrderRow, OutboxRow } from './rows.js';

const ORDER_UPSERT = `
  INSERT INTO orders (${ORDER_COLUMNS.join(', ')})
  SELECT ${ORDER_COLUMNS.join(', ')} FROM jsonb_populate_recordset(NULL::orders, $1::jsonb)
  ON CONFLICT (id) DO UPDATE SET ${ORDER_MUTABLE_COLUMNS.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}`;

const LEASE_UPSERT = `
  INSERT INTO leases SELECT * FROM jsonb_populate_recordset(NULL::leases, $1::jsonb)
  ON CONFLICT (id) DO UPDATE SET ${LEASE_MUTABLE_COLUMNS.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}`;

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
   * Write everything inside the caller's transaction. Rows are copied to JSON
   * now, so later changes to the in-memory rows cannot leak into this batch.
   */
  async write(tx: Queryable): Promise<void> {
    // Orders first: leases and fills reference them; leases before fills.
    if (this.orders.size > 0) await tx.query(ORDER_UPSERT, [json([...this.orders.values()])]);
    if (this.leases.size > 0) {
      // A resale lease references its source lease: insert sources first.
      const leases = [...this.leases.values()].sort(
        (a, b) => Number(a.source_lease_id !== null) - Number(b.source_lease_id !== null),
      );
      await tx.query(LEASE_UPSERT, [json(leases)]);
    }
    if (this.leaseNodes.length > 0) {
      await tx.query(
        `INSERT INTO lease_nodes SELECT * FROM jsonb_populate_recordset(NULL::lease_nodes, $1::jsonb)`,
        [json(this.leaseNodes)],
      );
    }
    if (this.fills.length > 0) {
      await tx.query(
        `INSERT INTO fills SELECT * FROM jsonb_populate_recordset(NULL::fills, $1::jsonb)`,
        [json(this.fills)],
      );
    }
    if (this.ledger.length > 0) {
      await tx.query(
        `INSERT INTO ledger_transactions (id, kind, order_id, lease_id)
         SELECT id, kind, order_id, lease_id
           FROM jsonb_to_recordset($1::jsonb) AS t(id text, kind text, order_id text, lease_id text)`,
        [
          json(
            this.ledger.map((t) => ({
              id: t.id,
              kind: t.kind,
              order_id: t.orderId ?? null,
              lease_id: t.leaseId ?? null,
            })),
          ),
        ],
      );
      const entries = this.ledger.flatMap((t) =>
        t.postings.map((p) => ({
          transaction_id: t.id,
          account_id: p.accountId,
          kind: p.kind,
          amount_cents: p.amountCents,
        })),
      );
      await tx.query(
        `INSERT INTO ledger_entries (transaction_id, account_id, kind, amount_cents)
         SELECT transaction_id, account_id, kind, amount_cents
           FROM jsonb_to_recordset($1::jsonb)
             AS e(transaction_id text, account_id text, kind text, amount_cents bigint)`,
        [json(entries)],
      );
    }
    if (this.outbox.length > 0) {
      await tx.query(
        `INSERT INTO outbox (event_id, subject, payload, created_ms)
         SELECT event_id, subject, payload, created_ms
           FROM jsonb_to_recordset($1::jsonb)
             AS o(event_id text, subject text, payload jsonb, created_ms bigint)`,
        [json(this.outbox)],
      );
    }
  }
}

function json(rows: readonly unknown[]): string {
  return JSON.stringify(rows);
}
