// What operators do to accounts and their tokens (issue 21,
// docs/api/admin.md): list and read accounts, change a credit limit (D3),
// suspend and reinstate, issue and revoke tokens (D24). Each change writes
// its audit row (audit.ts) in the transaction of the change; the caller
// drops the cached principals it makes stale (accounts/directory.ts) once
// the transaction has committed.

import { GpuxError, TOKEN_SCOPES, formatDollars, newId } from '@gpux/shared';
import type { Cents, TokenScope } from '@gpux/shared';

import type { Operator } from '../auth/authenticate.js';
import { hashToken, newApiToken } from '../auth/tokens.js';
import type { Queryable } from '../db/database.js';
import { recordAudit } from './audit.js';

export const ACCOUNT_STATUSES = ['active', 'suspended'] as const;
export type AccountStatus = (typeof ACCOUNT_STATUSES)[number];

export interface AdminAccountView {
  readonly accountId: string;
  readonly name: string;
  readonly organizationId: string;
  readonly organization: string;
  readonly status: AccountStatus;
  readonly suspendedAt: Date | null;
  /** Every scope some live token of the account holds, in TOKEN_SCOPES order. */
  readonly scopes: readonly TokenScope[];
  readonly liveTokens: number;
  readonly balanceCents: Cents;
  readonly creditLimitCents: Cents | null;
  readonly createdAt: Date;
}

export interface AccountFilter {
  /** The organization's name or id. */
  readonly organization?: string | undefined;
  /** Accounts with a live token holding this scope (`admin`: personal operator accounts). */
  readonly scope?: TokenScope | undefined;
  readonly status?: AccountStatus | undefined;
  readonly limit: number;
  readonly offset: number;
}

interface AccountRow {
  id: string;
  name: string;
  organization_id: string;
  organization: string;
  suspended_at: Date | null;
  credit_limit_cents: number | null;
  created_at: Date;
  scopes: string[];
  live_tokens: number;
  balance: number;
}

// The account, its organization, its live tokens' scopes and its balance.
const ACCOUNT_SELECT = `
  SELECT a.id, a.name, a.organization_id, o.name AS organization, a.suspended_at,
         a.credit_limit_cents, a.created_at,
         COALESCE((SELECT array_agg(DISTINCT s) FROM api_tokens t, unnest(t.scopes) s
                    WHERE t.account_id = a.id AND t.revoked_at IS NULL), '{}') AS scopes,
         (SELECT count(*)::int FROM api_tokens t
           WHERE t.account_id = a.id AND t.revoked_at IS NULL) AS live_tokens,
         (SELECT COALESCE(SUM(e.amount_cents), 0)::bigint FROM ledger_entries e
           WHERE e.account_id = a.id) AS balance
    FROM accounts a JOIN organizations o ON o.id = a.organization_id`;

function viewOf(r: AccountRow): AdminAccountView {
  const held = new Set(r.scopes);
  return {
    accountId: r.id,
    name: r.name,
    organizationId: r.organization_id,
    organization: r.organization,
    status: r.suspended_at === null ? 'active' : 'suspended',
    suspendedAt: r.suspended_at,
    scopes: TOKEN_SCOPES.filter((s) => held.has(s)),
    liveTokens: r.live_tokens,
    balanceCents: r.balance,
    creditLimitCents: r.credit_limit_cents,
    createdAt: r.created_at,
  };
}

/** Accounts matching the filter, newest first, and how many match. */
export async function listAccounts(
  q: Queryable,
  f: AccountFilter,
): Promise<{ rows: AdminAccountView[]; total: number }> {
  const where: string[] = [];
  const args: unknown[] = [];
  if (f.organization !== undefined) {
    args.push(f.organization);
    where.push(`(o.name = $${args.length} OR o.id = $${args.length})`);
  }
  if (f.scope !== undefined) {
    args.push(f.scope);
    where.push(`EXISTS (SELECT 1 FROM api_tokens t WHERE t.account_id = a.id
                  AND t.revoked_at IS NULL AND $${args.length} = ANY(t.scopes))`);
  }
  if (f.status !== undefined) {
    where.push(f.status === 'active' ? 'a.suspended_at IS NULL' : 'a.suspended_at IS NOT NULL');
  }
  const cond = where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
  const [count] = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n
       FROM accounts a JOIN organizations o ON o.id = a.organization_id ${cond}`,
    args,
  );
  const rows = await q.query<AccountRow>(
    `${ACCOUNT_SELECT} ${cond}
      ORDER BY a.created_at DESC, a.id DESC
      LIMIT $${args.length + 1} OFFSET $${args.length + 2}`,
    [...args, f.limit, f.offset],
  );
  return { rows: rows.map(viewOf), total: count?.n ?? 0 };
}

/** One account, or not_found. */
export async function adminAccountOf(q: Queryable, accountId: string): Promise<AdminAccountView> {
  const [row] = await q.query<AccountRow>(`${ACCOUNT_SELECT} WHERE a.id = $1`, [accountId]);
  if (row === undefined) throw new GpuxError('not_found', `no account ${accountId}`);
  return viewOf(row);
}

/** Locks the account's row for the change (its before) or answers not_found. */
async function lockAccount(
  tx: Queryable,
  accountId: string,
): Promise<{ suspended_at: Date | null; credit_limit_cents: number | null }> {
  const [row] = await tx.query<{ suspended_at: Date | null; credit_limit_cents: number | null }>(
    'SELECT suspended_at, credit_limit_cents FROM accounts WHERE id = $1 FOR UPDATE',
    [accountId],
  );
  if (row === undefined) throw new GpuxError('not_found', `no account ${accountId}`);
  return row;
}

/** Dollars as the API shows them in an audit row (D1). */
function limitJson(cents: number | null): number | null {
  return cents === null ? null : formatDollars(cents);
}

/** D3: a new credit limit (null: none). Returns whether it changed. */
export async function setCreditLimit(
  tx: Queryable,
  operator: Operator,
  accountId: string,
  creditLimitCents: Cents | null,
  reason: string,
): Promise<boolean> {
  const before = await lockAccount(tx, accountId);
  if (before.credit_limit_cents === creditLimitCents) return false;
  await tx.query('UPDATE accounts SET credit_limit_cents = $2 WHERE id = $1', [
    accountId,
    creditLimitCents,
  ]);
  await recordAudit(tx, {
    operator,
    action: 'account.credit_limit',
    targetType: 'account',
    targetId: accountId,
    reason,
    before: { credit_limit: limitJson(before.credit_limit_cents) },
    after: { credit_limit: limitJson(creditLimitCents) },
  });
  return true;
}

/**
 * Suspends (`suspend`) or reinstates the account. Returns whether its status
 * changed: suspending a suspended account, or reinstating an active one,
 * changes nothing and records nothing.
 */
export async function setSuspended(
  tx: Queryable,
  operator: Operator,
  accountId: string,
  suspend: boolean,
  reason: string,
): Promise<boolean> {
  const before = await lockAccount(tx, accountId);
  if ((before.suspended_at !== null) === suspend) return false;
  const [after] = await tx.query<{ suspended_at: Date | null }>(
    `UPDATE accounts SET suspended_at = ${suspend ? 'now()' : 'NULL'} WHERE id = $1
     RETURNING suspended_at`,
    [accountId],
  );
  await recordAudit(tx, {
    operator,
    action: suspend ? 'account.suspend' : 'account.reinstate',
    targetType: 'account',
    targetId: accountId,
    reason,
    before: {
      status: before.suspended_at === null ? 'active' : 'suspended',
      suspended_at: before.suspended_at?.toISOString() ?? null,
    },
    after: {
      status: suspend ? 'suspended' : 'active',
      suspended_at: after?.suspended_at?.toISOString() ?? null,
    },
  });
  return true;
}

export interface TokenView {
  readonly tokenId: string;
  readonly accountId: string;
  readonly scopes: readonly TokenScope[];
  readonly createdAt: Date;
  readonly revokedAt: Date | null;
}

interface TokenRow {
  id: string;
  account_id: string;
  scopes: TokenScope[];
  created_at: Date;
  revoked_at: Date | null;
}

function tokenView(r: TokenRow): TokenView {
  return {
    tokenId: r.id,
    accountId: r.account_id,
    scopes: r.scopes,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  };
}

/** The account's tokens, live and revoked, newest first; never a secret (D24). */
export async function tokensOf(q: Queryable, accountId: string): Promise<TokenView[]> {
  await adminAccountExists(q, accountId);
  const rows = await q.query<TokenRow>(
    `SELECT id, account_id, scopes, created_at, revoked_at FROM api_tokens
      WHERE account_id = $1 ORDER BY created_at DESC, id DESC`,
    [accountId],
  );
  return rows.map(tokenView);
}

async function adminAccountExists(q: Queryable, accountId: string): Promise<void> {
  const [row] = await q.query('SELECT 1 FROM accounts WHERE id = $1', [accountId]);
  if (row === undefined) throw new GpuxError('not_found', `no account ${accountId}`);
}

/** A new token of the account; `token` is shown once, only its hash is kept (D24). */
export async function issueToken(
  tx: Queryable,
  operator: Operator,
  accountId: string,
  scopes: readonly TokenScope[],
  reason: string,
): Promise<TokenView & { readonly token: string }> {
  await lockAccount(tx, accountId);
  const token = newApiToken();
  const [row] = await tx.query<TokenRow>(
    `INSERT INTO api_tokens (id, account_id, token_hash, scopes) VALUES ($1, $2, $3, $4)
     RETURNING id, account_id, scopes, created_at, revoked_at`,
    [newId('tok_'), accountId, hashToken(token), scopes],
  );
  if (row === undefined) throw new Error('INSERT … RETURNING returned nothing');
  await recordAudit(tx, {
    operator,
    action: 'token.issue',
    targetType: 'account',
    targetId: accountId,
    reason,
    before: null,
    after: { token_id: row.id, scopes: row.scopes },
  });
  return { ...tokenView(row), token };
}

/**
 * Revokes one token of the account. A token already revoked stays as it
 * was (revoking twice changes nothing and records nothing); `changed` says
 * which it was.
 */
export async function revokeToken(
  tx: Queryable,
  operator: Operator,
  accountId: string,
  tokenId: string,
  reason: string,
): Promise<{ token: TokenView; changed: boolean }> {
  const [row] = await tx.query<TokenRow>(
    `SELECT id, account_id, scopes, created_at, revoked_at FROM api_tokens
      WHERE id = $1 AND account_id = $2 FOR UPDATE`,
    [tokenId, accountId],
  );
  if (row === undefined) {
    throw new GpuxError('not_found', `account ${accountId} has no token ${tokenId}`);
  }
  if (row.revoked_at !== null) return { token: tokenView(row), changed: false };
  const [revoked] = await tx.query<TokenRow>(
    `UPDATE api_tokens SET revoked_at = now() WHERE id = $1
     RETURNING id, account_id, scopes, created_at, revoked_at`,
    [tokenId],
  );
  if (revoked === undefined) throw new Error('UPDATE … RETURNING returned nothing');
  await recordAudit(tx, {
    operator,
    action: 'token.revoke',
    targetType: 'account',
    targetId: accountId,
    reason,
    before: { token_id: tokenId, revoked_at: null },
    after: { token_id: tokenId, revoked_at: revoked.revoked_at?.toISOString() ?? null },
  });
  return { token: tokenView(revoked), changed: true };
}
