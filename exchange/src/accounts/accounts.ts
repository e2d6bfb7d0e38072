// Accounts and their organizations (D31), tokens (D24), and the account view
// (D33). Reads and writes go through a Queryable, so callers choose the
// transaction.

import { GpuxError, newId } from '@gpux/shared';
import type { Cents, TokenScope } from '@gpux/shared';

import { hashToken, newApiToken } from '../auth/tokens.js';
import type { Queryable } from '../db/database.js';
import { balanceOf } from '../ledger/ledger.js';

export interface NewAccount {
  readonly name: string;
  /** The organization's name: created on first use, joined after (D17 counts it). */
  readonly organization: string;
  readonly scopes: readonly TokenScope[];
  readonly creditLimitCents?: Cents | undefined;
}

export interface CreatedAccount {
  readonly accountId: string;
  readonly organizationId: string;
  readonly organization: string;
  readonly scopes: readonly TokenScope[];
  readonly creditLimitCents: Cents | null;
  /** The token's id (api_tokens.id), by which operators revoke it. */
  readonly tokenId: string;
  /** Shown once: only its hash is stored. */
  readonly token: string;
}

export async function createAccount(tx: Queryable, a: NewAccount): Promise<CreatedAccount> {
  // Find-or-create without a race: a concurrent creator of the same name wins
  // the INSERT, and this one reads its row.
  await tx.query(
    'INSERT INTO organizations (id, name) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING',
    [newId('org_'), a.organization],
  );
  const [org] = await tx.query<{ id: string }>('SELECT id FROM organizations WHERE name = $1', [
    a.organization,
  ]);
  if (org === undefined) throw new Error(`organization ${a.organization} vanished`);
  const accountId = newId('acc_');
  await tx.query(
    'INSERT INTO accounts (id, organization_id, name, credit_limit_cents) VALUES ($1, $2, $3, $4)',
    [accountId, org.id, a.name, a.creditLimitCents ?? null],
  );
  const token = newApiToken();
  const tokenId = newId('tok_');
  await tx.query(
    'INSERT INTO api_tokens (id, account_id, token_hash, scopes) VALUES ($1, $2, $3, $4)',
    [tokenId, accountId, hashToken(token), a.scopes],
  );
  return {
    accountId,
    organizationId: org.id,
    organization: a.organization,
    scopes: a.scopes,
    creditLimitCents: a.creditLimitCents ?? null,
    tokenId,
    token,
  };
}

/** Who a request is, once its token checks out. */
export interface Principal {
  readonly accountId: string;
  readonly organizationId: string;
  /** The token's id (api_tokens.id): operators revoke tokens by it. */
  readonly tokenId: string;
  readonly scopes: ReadonlySet<string>;
  /** D3: null means no limit. */
  readonly creditLimitCents: Cents | null;
  /**
   * An operator suspended the account: every token of it is refused with
   * account_suspended (auth/authenticate.ts, providers/grpc-server.ts).
   */
  readonly suspended: boolean;
}

interface PrincipalRow {
  token_id: string;
  account_id: string;
  organization_id: string;
  scopes: string[];
  credit_limit_cents: number | null;
  suspended: boolean;
}

const PRINCIPAL_COLUMNS = `t.id AS token_id, t.account_id, a.organization_id, t.scopes,
       a.credit_limit_cents, a.suspended_at IS NOT NULL AS suspended`;

function principalFrom(row: PrincipalRow): Principal {
  return {
    accountId: row.account_id,
    organizationId: row.organization_id,
    tokenId: row.token_id,
    scopes: new Set(row.scopes),
    creditLimitCents: row.credit_limit_cents,
    suspended: row.suspended,
  };
}

/** The account of a live token, or undefined (D24: 401 for the caller). */
export async function principalOf(q: Queryable, token: string): Promise<Principal | undefined> {
  const [row] = await q.query<PrincipalRow>(
    `SELECT ${PRINCIPAL_COLUMNS}
       FROM api_tokens t JOIN accounts a ON a.id = t.account_id
      WHERE t.token_hash = $1 AND t.revoked_at IS NULL`,
    [hashToken(token)],
  );
  return row === undefined ? undefined : principalFrom(row);
}

/**
 * The principals of the live tokens among `hashes` (token hashes, as
 * hashToken makes them), by hash in hex: one statement for many tokens
 * (accounts/directory.ts renews what it keeps with it).
 */
export async function principalsOf(
  q: Queryable,
  hashes: readonly Buffer[],
): Promise<Map<string, Principal>> {
  const rows = await q.query<PrincipalRow & { token_hash: Buffer }>(
    `SELECT t.token_hash, ${PRINCIPAL_COLUMNS}
       FROM api_tokens t JOIN accounts a ON a.id = t.account_id
      WHERE t.token_hash = ANY($1::bytea[]) AND t.revoked_at IS NULL`,
    [hashes],
  );
  return new Map(
    rows.map((row) => [Buffer.from(row.token_hash).toString('hex'), principalFrom(row)]),
  );
}

export interface AccountView {
  readonly accountId: string;
  readonly name: string;
  readonly organizationId: string;
  readonly organization: string;
  readonly balanceCents: Cents;
  readonly creditLimitCents: Cents | null;
  readonly createdAt: Date;
}

/** D33: the caller's account with its balance from the ledger. */
export async function accountView(q: Queryable, accountId: string): Promise<AccountView> {
  const [row] = await q.query<{
    id: string;
    name: string;
    organization_id: string;
    organization: string;
    credit_limit_cents: number | null;
    created_at: Date;
  }>(
    `SELECT a.id, a.name, a.organization_id, o.name AS organization, a.credit_limit_cents, a.created_at
       FROM accounts a JOIN organizations o ON o.id = a.organization_id
      WHERE a.id = $1`,
    [accountId],
  );
  if (row === undefined) throw new GpuxError('not_found', 'no such account');
  return {
    accountId: row.id,
    name: row.name,
    organizationId: row.organization_id,
    organization: row.organization,
    balanceCents: await balanceOf(q, accountId),
    creditLimitCents: row.credit_limit_cents,
    createdAt: row.created_at,
  };
}
