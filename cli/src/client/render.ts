// The human output of an account's own answers: who, the balance, the ledger.

import type { Schemas } from './api.js';
import { fields, money, pageLine, paint, signedMoney, table, text, time } from './output.js';
import type { Style } from './output.js';

export type Pairs = readonly (readonly [string, string])[];

/** The account; `more` lines after it (the exchange, the config file). */
export function showAccount(a: Schemas['Account'], style: Style, more: Pairs = []): string {
  return fields(
    [
      ['account', a.account_id],
      ['name', a.name],
      ['organization', `${a.organization} (${a.organization_id})`],
      ['created', time(a.created_at, style)],
      ...more,
    ],
    style,
  );
}

export function showBalance(a: Schemas['Account'], style: Style): string {
  return fields(
    [
      ['balance', signedMoney(a.balance, style)],
      ['credit limit', a.credit_limit === null ? 'none' : money(a.credit_limit)],
    ],
    style,
  );
}

export type Transaction = Schemas['Transactions']['transactions'][number];

export function transactionRows(rows: readonly Transaction[], style: Style): string[][] {
  return rows.map((t) => [
    time(t.created_at, style),
    t.transaction_kind,
    t.kind,
    signedMoney(t.amount, style),
    text(t.order_id),
    text(t.lease_id),
    t.transaction_id,
  ]);
}

export const TRANSACTION_HEAD = ['time', 'transaction', 'entry', 'amount', 'order', 'lease', 'id'];

export function showTransactions(page: Schemas['Transactions'], style: Style): string {
  return (
    table(TRANSACTION_HEAD, transactionRows(page.transactions, style), style) +
    pageLine(page, page.transactions.length, style)
  );
}

/** The operator's admin token has no account: what whoami says of it. */
export function showAdminToken(style: Style, more: Pairs = []): string {
  return fields(
    [
      [
        'token',
        paint("the exchange's admin token (GPUX_ADMIN_TOKEN): no account", 'yellow', style),
      ],
      ...more,
    ],
    style,
  );
}

/** A list of ids on one line, or `none`. */
export function ids(list: readonly string[]): string {
  return list.length === 0 ? 'none' : list.join(', ');
}
