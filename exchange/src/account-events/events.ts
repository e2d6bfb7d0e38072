// Each account's own events (issue 22, docs/api/account-events.md): what
// they are, and how they are written. A book's write batch writes them with
// its other rows (market/change-set.ts); other changes that report one
// (an operator's adjustment, a refreshed kubeconfig) call appendAccountEvents
// in their own transaction. Either way the event commits with its change.
//
// Numbering (migrations/0023): the change queues its events as one row of
// account_event_batches; the numberer (numberer.ts) numbers them from each
// account's counter after the commit, in the order they were recorded.

import { InvariantError, formatDollars, newId } from '@gpux/shared';
import type { CancelReason } from '@gpux/shared';

import type { Queryable } from '../db/database.js';
import { PAYOUTS_ACCOUNT_ID, PLATFORM_ACCOUNT_ID } from '../ledger/ledger.js';
import type { LedgerTransaction } from '../ledger/ledger.js';
import { iso } from '../views/format.js';
import type { FillRow, LeaseRow, OrderRow } from '../market/rows.js';

export const ACCOUNT_EVENT_KINDS = [
  'order.filled',
  'order.partially_filled',
  'order.cancelled',
  'lease.provisioning',
  'lease.active',
  'lease.failed',
  'lease.terminated',
  'lease.expired',
  'lease.sold',
  'lease.kubeconfig_refreshed',
  'transaction.posted',
] as const;
export type AccountEventKind = (typeof ACCOUNT_EVENT_KINDS)[number];

/** One event as recorded, before it is numbered. */
export interface AccountEventInput {
  readonly account_id: string;
  readonly event_id: string;
  readonly kind: AccountEventKind;
  readonly data: Record<string, unknown>;
  readonly created_ms: number;
}

/** Accounts of the platform's own: they take part in every fill and get no events. */
const SILENT = new Set([PLATFORM_ACCOUNT_ID, PAYOUTS_ACCOUNT_ID]);

export function accountEvent(
  accountId: string,
  kind: AccountEventKind,
  data: Record<string, unknown>,
  at: number,
): AccountEventInput {
  return { account_id: accountId, event_id: newId('evt_'), kind, data, created_ms: at };
}

const orderFields = (o: OrderRow): Record<string, unknown> => ({
  order_id: o.id,
  side: o.side,
  gpu_type: o.gpu_type,
  zone: o.zone,
  gpu_count: o.gpu_count,
  filled_gpus: o.filled_gpus,
});

/** order.filled or order.partially_filled: one fill of one of the account's orders. */
export function fillEvent(order: OrderRow, fill: FillRow): AccountEventInput {
  const filled = order.filled_gpus === order.gpu_count;
  return accountEvent(
    order.account_id,
    filled ? 'order.filled' : 'order.partially_filled',
    {
      ...orderFields(order),
      fill: {
        id: fill.id,
        gpus: fill.gpus,
        price: formatDollars(fill.price_cents),
        hours: fill.hours,
        lease_id: fill.lease_id,
        matched_at: iso(fill.at_ms),
      },
    },
    fill.at_ms,
  );
}

export function cancelEvent(order: OrderRow, reason: CancelReason, at: number): AccountEventInput {
  return accountEvent(
    order.account_id,
    'order.cancelled',
    {
      ...orderFields(order),
      cancelled_gpus: order.cancelled_gpus,
      reason,
      cancelled_at: iso(at),
    },
    at,
  );
}

type LeaseKind = Extract<AccountEventKind, `lease.${string}`>;

/** A lease event for its holder: the lease's state after the change. */
export function leaseEvent(l: LeaseRow, kind: LeaseKind, at: number): AccountEventInput {
  const data: Record<string, unknown> = {
    lease_id: l.id,
    order_id: l.buy_order_id,
    gpu_type: l.gpu_type,
    zone: l.zone,
    gpu_count: l.gpu_count,
    status: l.status,
    start_time: iso(l.start_ms),
    end_time: iso(l.end_ms),
    ...(l.ended_ms === null ? {} : { ended_at: iso(l.ended_ms) }),
    ...(l.end_reason === null ? {} : { end_reason: l.end_reason }),
    ...(l.refund_cents === null ? {} : { refund: formatDollars(l.refund_cents) }),
    ...(l.transfer_ms === null ? {} : { transfer_time: iso(l.transfer_ms) }),
  };
  return accountEvent(l.account_id, kind, data, at);
}

/** transaction.posted: one per account of the transaction (the platform's aside). */
export function transactionEvents(t: LedgerTransaction, at: number): AccountEventInput[] {
  const byAccount = new Map<string, { amount: number; kinds: string[] }>();
  for (const p of t.postings) {
    if (SILENT.has(p.accountId)) continue;
    const a = byAccount.get(p.accountId) ?? { amount: 0, kinds: [] };
    a.amount += p.amountCents;
    a.kinds.push(p.kind);
    byAccount.set(p.accountId, a);
  }
  return [...byAccount].map(([accountId, a]) =>
    accountEvent(
      accountId,
      'transaction.posted',
      {
        transaction_id: t.id,
        kind: t.kind,
        amount: formatDollars(a.amount),
        entries: a.kinds,
        order_id: t.orderId ?? null,
        lease_id: t.leaseId ?? null,
      },
      at,
    ),
  );
}

/** The events as queued (account_event_batches.events, migrations/0023), in order. */
export function queued(events: readonly AccountEventInput[]): {
  account_id: string;
  event_id: string;
  kind: string;
  payload: unknown;
  created_ms: number;
}[] {
  return events.map((e) => {
    if (SILENT.has(e.account_id)) {
      throw new InvariantError(`an event for the platform's account ${e.account_id}`);
    }
    return {
      account_id: e.account_id,
      event_id: e.event_id,
      kind: e.kind,
      payload: e.data,
      created_ms: e.created_ms,
    };
  });
}

/**
 * The events of one change as ONE queued row (a statement's CTE, `$` its
 * parameter: queued()'s rows as JSON). Numbered after the commit
 * (account-events/numberer.ts).
 */
export const QUEUE_SQL = `INSERT INTO account_event_batches (events) SELECT $::json`;

/** Queues events in `q`'s transaction (changes made outside a book's batch). */
export async function appendAccountEvents(
  q: Queryable,
  events: readonly AccountEventInput[],
): Promise<void> {
  if (events.length === 0) return;
  await q.query(QUEUE_SQL.replace('$', '$1'), [JSON.stringify(queued(events))]);
}
