// What one batch of a book's commands changed, written to PostgreSQL as ONE
// statement: data-modifying CTEs, one per table, each row set passed as one
// JSON parameter (json_populate_recordset). One statement is one
// transaction (autocommit): all of it or none of it is written, and the
// ledger's balance trigger checks it (migration 0006, docs/persistence.md).
// One round trip whatever the batch size; only the tables with rows are in
// the statement, and each of its few texts stays prepared on each connection.

import { QUEUE_SQL, queued, transactionEvents } from '../account-events/events.js';
import type { AccountEventInput } from '../account-events/events.js';
import type { Queryable } from '../db/database.js';
import { assertBalanced } from '../ledger/ledger.js';
import type { LedgerTransaction } from '../ledger/ledger.js';
import { LEASE_MUTABLE_COLUMNS, ORDER_COLUMNS, ORDER_MUTABLE_COLUMNS } from './rows.js';
import type { FillRow, LeaseNodeRow, LeaseRow, OrderRow, OutboxRow } from './rows.js';

/** One row of audit_log, as admin/audit.ts's auditRow makes it. */
export interface AuditRow {
  readonly id: string;
  readonly actor: string;
  readonly actor_token_id: string | null;
  readonly action: string;
  readonly target_type: string;
  readonly target_id: string;
  readonly reason: string | null;
  readonly before: unknown;
  readonly after: unknown;
}

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
  // D3: holds of orders that closed, and of limit buys that filled in part (orders/credit.ts).
  `DELETE FROM credit_holds WHERE order_id IN (SELECT json_array_elements_text($::json))`,
  `UPDATE credit_holds h SET cents = x.cents
      FROM json_to_recordset($::json) AS x(order_id text, cents bigint)
     WHERE h.order_id = x.order_id`,
  // D32: the buyer's SSH keys of the moment of the fill, for the lease's provisioning.
  `INSERT INTO lease_keys (lease_id, position, public_key)
    SELECT x.lease_id,
           row_number() OVER (PARTITION BY x.lease_id ORDER BY k.created_at, k.id),
           k.public_key
      FROM json_to_recordset($::json) AS x(lease_id text, account_id text)
      JOIN ssh_keys k ON k.account_id = x.account_id AND k.deleted_at IS NULL`,
  // D29: node status as heartbeats (or their silence) set it.
  `UPDATE nodes n SET status = x.status
      FROM json_to_recordset($::json) AS x(id text, status text)
     WHERE n.id = x.id`,
  // D23: the answer of an idempotent request, with its effect (auth/idempotency.ts).
  `UPDATE idempotency_keys k SET status_code = x.status_code, response_body = x.response_body
      FROM json_to_recordset($::json)
        AS x(account_id text, key text, status_code integer, response_body text, created_ms bigint)
     WHERE k.account_id = x.account_id AND k.key = x.key AND k.created_ms = x.created_ms`,
  // Issue 21: an operator's lease action is audit-logged by the batch that makes it (admin/audit.ts).
  `INSERT INTO audit_log (id, actor, actor_token_id, action, target_type, target_id, reason, before, after)
    SELECT id, actor, actor_token_id, action, target_type, target_id, reason, before, after
      FROM json_to_recordset($::json)
        AS x(id text, actor text, actor_token_id text, action text, target_type text,
             target_id text, reason text, before jsonb, after jsonb)`,
  // Issue 21: a book halted (halted_ms) or resumed (NULL) by an operator (migrations/0016).
  `INSERT INTO book_halts (gpu_type, zone, halted_ms)
    SELECT gpu_type, zone, halted_ms
      FROM json_to_recordset($::json) AS x(gpu_type text, zone text, halted_ms bigint)
    ON CONFLICT (gpu_type, zone) DO UPDATE SET halted_ms = EXCLUDED.halted_ms`,
  // Issue 21: an operator's cordon of a cluster, with the withdrawals it makes (market/cordon.ts).
  `UPDATE clusters c SET cordoned_at = x.cordoned_at, cordoned_by = x.cordoned_by
      FROM json_to_recordset($::json) AS x(id text, cordoned_at timestamptz, cordoned_by text)
     WHERE c.id = x.id`,
  // Issue 22: the live feed's last number, with the changes it numbers (migrations/0019).
  `INSERT INTO book_sequences (gpu_type, zone, sequence)
    SELECT gpu_type, zone, sequence
      FROM json_to_recordset($::json) AS x(gpu_type text, zone text, sequence bigint)
    ON CONFLICT (gpu_type, zone) DO UPDATE SET sequence = EXCLUDED.sequence`,
  // Issue 22: each account's events, queued as ONE row and numbered after the
  // commit (migrations/0023, account-events/numberer.ts).
  QUEUE_SQL,
];

/** How many tables a batch statement can write: bit i of its mask is PARTS[i]. */
export const BATCH_PARTS = PARTS.length;

const statements = new Map<number, string>();

/**
 * The batch statement for the tables with rows (bit i of `mask`: PARTS[i]),
 * their parameters numbered in PARTS order. Each text is prepared once per
 * connection, and only the few masks that occur are ever made; a batch that
 * only rests an order writes one table.
 *
 * `fenced`: the statement's last parameter names the epochs of its books,
 * and the statement fails whole (gpux_fence, SQLSTATE GX001) unless they
 * are still current (market/ownership.ts). The fence is the statement's own
 * SELECT, so it runs whenever the statement does: the data-modifying CTEs
 * and the fence commit together or not at all.
 */
export function writeBatchSql(mask: number, fenced = false): string {
  const key = fenced ? -mask - 1 : mask;
  let sql = statements.get(key);
  if (sql === undefined) {
    const ctes: string[] = [];
    PARTS.forEach((part, i) => {
      if ((mask & (1 << i)) !== 0)
        ctes.push(`w${i} AS (${part.replace('$', `$${ctes.length + 1}`)})`);
    });
    const last = fenced ? `SELECT gpux_fence($${ctes.length + 1}::json)` : 'SELECT 1';
    sql = `${WRITE_BATCH_MARK}\nWITH ${ctes.join(',\n  ')}\n${last}`;
    statements.set(key, sql);
  }
  return sql;
}

/** The answer of an idempotent request (D23), keyed like idempotency_keys. */
export interface ClaimAnswer {
  readonly account_id: string;
  readonly key: string;
  /** The claim's created_ms: this claim's answer, not a later claim's of the key. */
  readonly created_ms: number;
  readonly status_code: number;
  readonly response_body: string;
}

export class ChangeSet {
  /** Rows to insert or update, by id; the last state of the batch wins. */
  readonly orders = new Map<string, OrderRow>();
  readonly leases = new Map<string, LeaseRow>();
  readonly leaseNodes: LeaseNodeRow[] = [];
  readonly fills: FillRow[] = [];
  readonly ledger: LedgerTransaction[] = [];
  readonly outbox: OutboxRow[] = [];
  /** Credit holds (D3) by order id: the new amount, or 0 to drop the hold. */
  readonly holds = new Map<string, number>();
  /** Answers of idempotent requests whose effect is in this batch (D23). */
  readonly answers: ClaimAnswer[] = [];
  /** Node status changes (D29). */
  readonly nodes: { id: string; status: 'available' | 'online' | 'offline' }[] = [];
  /** New leases whose buyer's SSH keys are copied in this batch (D32). */
  readonly keySnapshots: { lease_id: string; account_id: string }[] = [];
  /** Audit rows of the operators' actions this batch makes (issue 21, admin/audit.ts). */
  readonly audits: AuditRow[] = [];
  /** Books halted (halted_ms) or resumed (null) by this batch. */
  readonly halts: { gpu_type: string; zone: string; halted_ms: number | null }[] = [];
  /** Clusters cordoned (an ISO time, and by whom) or uncordoned (nulls) (market/cordon.ts). */
  readonly cordons: {
    id: string;
    cordoned_at: string | null;
    cordoned_by: 'operator' | 'provider' | null;
  }[] = [];
  /** The feed's last number of each book whose levels or trades this batch changed (feed/). */
  readonly sequences: { gpu_type: string; zone: string; sequence: number }[] = [];
  /** The accounts' own events this batch reports (account-events/events.ts), in order. */
  readonly events: AccountEventInput[] = [];

  get empty(): boolean {
    return (
      this.orders.size === 0 &&
      this.leases.size === 0 &&
      this.fills.length === 0 &&
      this.ledger.length === 0 &&
      this.outbox.length === 0 &&
      this.holds.size === 0 &&
      this.answers.length === 0 &&
      this.keySnapshots.length === 0 &&
      this.nodes.length === 0 &&
      this.audits.length === 0 &&
      this.halts.length === 0 &&
      this.cordons.length === 0 &&
      this.sequences.length === 0 &&
      this.events.length === 0
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
      for (const [id, c] of s.holds) all.holds.set(id, c);
      all.answers.push(...s.answers);
      all.keySnapshots.push(...s.keySnapshots);
      all.nodes.push(...s.nodes);
      all.audits.push(...s.audits);
      all.halts.push(...s.halts);
      all.cordons.push(...s.cordons);
      all.sequences.push(...s.sequences);
      all.events.push(...s.events);
    }
    return all;
  }

  order(r: OrderRow): void {
    this.orders.set(r.id, r);
  }

  lease(r: LeaseRow): void {
    this.leases.set(r.id, r);
  }

  /** D3: the order's credit hold becomes `cents` (0: dropped). */
  hold(orderId: string, cents: number): void {
    this.holds.set(orderId, cents);
  }

  /** A ledger transaction, posted at `at`: each account in it gets a transaction.posted event. */
  post(t: LedgerTransaction, at: number): void {
    assertBalanced(t.postings);
    this.ledger.push(t);
    this.events.push(...transactionEvents(t, at));
  }

  /** Events of the accounts, in the order they happened. */
  event(...events: AccountEventInput[]): void {
    this.events.push(...events);
  }

  /**
   * Write everything in one statement (see the top of this file). Rows are
   * copied to JSON now, so later changes to the in-memory rows cannot leak
   * into this batch. `fence`: the epochs the statement must still find
   * current (Fence.tokenFor, market/ownership.ts); without one it is not
   * fenced (tests of a market that no ownership guards).
   */
  async write(q: Queryable, fence?: string): Promise<void> {
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
      [...this.holds].filter(([, c]) => c === 0).map(([id]) => id),
      [...this.holds].filter(([, c]) => c > 0).map(([id, c]) => ({ order_id: id, cents: c })),
      this.keySnapshots,
      this.nodes,
      this.answers,
      this.audits,
      this.halts,
      this.cordons,
      this.sequences,
    ];
    let mask = 0;
    const params: string[] = [];
    parts.forEach((rows, i) => {
      if (rows.length === 0) return;
      mask |= 1 << i;
      params.push(json(rows));
    });
    // The events' one row: the array of them is its value (QUEUE_SQL).
    if (this.events.length > 0) {
      mask |= 1 << parts.length;
      params.push(json(queued(this.events)));
    }
    if (mask === 0) return;
    if (fence === undefined) {
      await q.query(writeBatchSql(mask), params, { name: `gpux_write_batch_${mask}` });
      return;
    }
    params.push(fence);
    await q.query(writeBatchSql(mask, true), params, { name: `gpux_write_batch_f${mask}` });
  }
}

function json(rows: readonly unknown[]): string {
  return JSON.stringify(rows);
}
