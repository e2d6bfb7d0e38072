// What operators do with money (issue 21, docs/api/admin.md): an adjustment
// (an outage credit, a goodwill refund, a correction) against the platform's
// account, and a payout of a provider's earnings to the payouts account.
// Each is one balanced ledger transaction (D3: the ledger sums to zero),
// written with its audit row in ONE statement (market/change-set.ts) inside
// the caller's transaction.

import { GpuxError, fieldError, formatDollars, newId } from '@gpux/shared';
import type { Cents } from '@gpux/shared';

import type { Operator } from '../auth/authenticate.js';
import type { Queryable } from '../db/database.js';
import { PAYOUTS_ACCOUNT_ID, PLATFORM_ACCOUNT_ID, balanceOf } from '../ledger/ledger.js';
import type { TransactionKind } from '../ledger/ledger.js';
import { adjustmentPostings, payoutPostings } from '../ledger/postings.js';
import { ChangeSet } from '../market/change-set.js';
import { auditRow } from './audit.js';

export interface Posted {
  readonly transactionId: string;
  readonly kind: TransactionKind;
  readonly accountId: string;
  /** The account's side: positive credits it. */
  readonly amountCents: Cents;
  readonly balanceBeforeCents: Cents;
  readonly balanceAfterCents: Cents;
}

/**
 * Locks the account's row, so two money calls for one account take turns
 * (a payout's balance check then sees the other's posting); not_found for
 * an unknown account, invalid_request for the platform's own accounts.
 */
async function lockCustomer(tx: Queryable, accountId: string): Promise<void> {
  const [row] = await tx.query<{ id: string }>('SELECT id FROM accounts WHERE id = $1 FOR UPDATE', [
    accountId,
  ]);
  if (row === undefined) throw new GpuxError('not_found', `no account ${accountId}`);
  if (accountId === PLATFORM_ACCOUNT_ID || accountId === PAYOUTS_ACCOUNT_ID) {
    throw fieldError('id', 'invalid', `${accountId} is the platform’s own account`);
  }
}

async function post(
  tx: Queryable,
  operator: Operator,
  accountId: string,
  kind: 'adjustment' | 'payout',
  cents: Cents,
  reason: string,
  before: Cents,
): Promise<Posted> {
  const transactionId = newId('txn_');
  const postings =
    kind === 'adjustment' ? adjustmentPostings(accountId, cents) : payoutPostings(accountId, cents);
  const amountCents = kind === 'adjustment' ? cents : -cents;
  const after = before + amountCents;
  const changes = new ChangeSet();
  changes.post({ id: transactionId, kind, postings }, Date.now());
  changes.audits.push(
    auditRow({
      operator,
      action: kind === 'adjustment' ? 'account.adjustment' : 'account.payout',
      targetType: 'account',
      targetId: accountId,
      reason,
      before: { balance: formatDollars(before) },
      after: {
        balance: formatDollars(after),
        transaction_id: transactionId,
        amount: formatDollars(amountCents),
      },
    }),
  );
  // The ledger rows and the audit row: one statement, checked balanced by the database.
  await changes.write(tx);
  return {
    transactionId,
    kind,
    accountId,
    amountCents,
    balanceBeforeCents: before,
    balanceAfterCents: after,
  };
}

/** An adjustment of `cents` (positive: credits the account) against the platform's account. */
export async function postAdjustment(
  tx: Queryable,
  operator: Operator,
  accountId: string,
  cents: Cents,
  reason: string,
): Promise<Posted> {
  await lockCustomer(tx, accountId);
  const before = await balanceOf(tx, accountId);
  return post(tx, operator, accountId, 'adjustment', cents, reason, before);
}

/**
 * A payout of `cents` (> 0) of the account's earnings: refused with
 * insufficient_funds when it is above the account's balance.
 */
export async function postPayout(
  tx: Queryable,
  operator: Operator,
  accountId: string,
  cents: Cents,
  reason: string,
): Promise<Posted> {
  await lockCustomer(tx, accountId);
  const before = await balanceOf(tx, accountId);
  if (cents > before) {
    throw new GpuxError(
      'insufficient_funds',
      `a payout of ${formatDollars(cents)} is above the account’s balance of ${formatDollars(before)}`,
    );
  }
  // The payouts account is made by the first payout, in the platform's organization.
  await tx.query(
    `INSERT INTO accounts (id, organization_id, name) VALUES ($1, 'org_platform', 'payouts')
     ON CONFLICT (id) DO NOTHING`,
    [PAYOUTS_ACCOUNT_ID],
  );
  return post(tx, operator, accountId, 'payout', cents, reason, before);
}
