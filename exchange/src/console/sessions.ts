// Console sessions (issue 23, docs/console.md): an operator token, given
// once in the body of POST /v1/console/session, is exchanged for a random
// session id in an HttpOnly, SameSite=Strict cookie. The session is a row of
// console_sessions (migrations/0021) holding a hash of the id, so any
// exchange process can check it; the token it was opened with is checked
// again on every request, so a revoked token or a suspended account ends it.
// Requests that change something must also carry X-CSRF-Token, derived from
// the session id (a page of another site can neither read the cookie nor
// the token).

import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

import { GpuxError } from '@gpux/shared';

import { principalOf } from '../accounts/accounts.js';
import type { Principal } from '../accounts/accounts.js';
import { ADMIN_TOKEN_ACTOR } from '../auth/authenticate.js';
import type { Operator } from '../auth/authenticate.js';
import { sameSecret } from '../auth/tokens.js';
import type { Queryable } from '../db/database.js';
import { PLATFORM_ACCOUNT_ID } from '../ledger/ledger.js';

/** The cookie's name. */
export const SESSION_COOKIE = 'gpux_console';
/** The header that must carry the session's CSRF token on a change. */
export const CSRF_HEADER = 'x-csrf-token';
/** GPUX_CONSOLE_SESSION_HOURS' default. */
export const DEFAULT_SESSION_HOURS = 12;

const hashOf = (id: string): Buffer => createHash('sha256').update(id, 'utf8').digest();
const proofOf = (id: string, token: string): Buffer =>
  createHmac('sha256', id).update(token, 'utf8').digest();

/** The CSRF token of a session: not stored, derived from its id. */
export function csrfTokenOf(sessionId: string): string {
  return createHmac('sha256', sessionId).update('gpux console csrf', 'utf8').digest('base64url');
}

export interface ConsoleSession extends Operator {
  readonly sessionId: string;
  readonly expiresAt: Date;
}

/**
 * Open a session for an operator token; the caller sets the cookie. A token
 * that is not an operator's is 401 (unknown), 403 (no `admin` scope) or
 * 403 account_suspended, as on the admin API.
 */
export async function openSession(
  db: Queryable,
  adminToken: string,
  token: string,
  hours: number,
): Promise<ConsoleSession> {
  const sessionId = randomBytes(32).toString('base64url');
  let operator: Operator;
  let proof: Buffer | null = null;
  if (sameSecret(token, adminToken)) {
    operator = { actor: ADMIN_TOKEN_ACTOR, tokenId: null };
    proof = proofOf(sessionId, token);
  } else {
    const p = await principalOf(db, token);
    if (p === undefined) throw new GpuxError('unauthorized', 'unknown or revoked API token');
    if (p.suspended) {
      throw new GpuxError('account_suspended', `account ${p.accountId} is suspended`);
    }
    if (!p.scopes.has('admin')) {
      throw new GpuxError('forbidden', 'this token lacks the "admin" scope');
    }
    operator = { actor: p.accountId, tokenId: p.tokenId };
  }
  // Expired sessions are dropped by each sign-in: the table stays small.
  await db.query('DELETE FROM console_sessions WHERE expires_at < now()');
  const [row] = await db.query<{ expires_at: Date }>(
    `INSERT INTO console_sessions (id_hash, actor, token_id, admin_proof, expires_at)
     VALUES ($1, $2, $3, $4, now() + make_interval(hours => $5)) RETURNING expires_at`,
    [hashOf(sessionId), operator.actor, operator.tokenId, proof, hours],
  );
  return { ...operator, sessionId, expiresAt: row?.expires_at ?? new Date() };
}

/**
 * The operator of a live session, or undefined: unknown, expired, signed
 * out, or its token no longer an operator's (the session is then removed).
 */
export async function sessionOperator(
  db: Queryable,
  adminToken: string,
  sessionId: string,
): Promise<ConsoleSession | undefined> {
  const hash = hashOf(sessionId);
  const [row] = await db.query<{
    actor: string;
    token_id: string | null;
    admin_proof: Buffer | null;
    expires_at: Date;
    live: boolean | null;
  }>(
    `SELECT s.actor, s.token_id, s.admin_proof, s.expires_at,
            (t.revoked_at IS NULL AND a.suspended_at IS NULL AND 'admin' = ANY (t.scopes)) AS live
       FROM console_sessions s
       LEFT JOIN api_tokens t ON t.id = s.token_id
       LEFT JOIN accounts a ON a.id = t.account_id
      WHERE s.id_hash = $1 AND s.expires_at > now()`,
    [hash],
  );
  if (row === undefined) return undefined;
  const valid =
    row.token_id === null
      ? row.admin_proof !== null && timingSafeEqual(row.admin_proof, proofOf(sessionId, adminToken))
      : row.live === true;
  if (!valid) {
    await closeSession(db, sessionId);
    return undefined;
  }
  return { actor: row.actor, tokenId: row.token_id, sessionId, expiresAt: row.expires_at };
}

export async function closeSession(db: Queryable, sessionId: string): Promise<void> {
  await db.query('DELETE FROM console_sessions WHERE id_hash = $1', [hashOf(sessionId)]);
}

/** The session id in a Cookie header, or undefined. */
export function sessionIdOf(cookieHeader: string | undefined): string | undefined {
  if (cookieHeader === undefined) return undefined;
  for (const part of cookieHeader.split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === SESSION_COOKIE) {
      const v = value.join('=');
      return /^[A-Za-z0-9_-]{43}$/.test(v) ? v : undefined;
    }
  }
  return undefined;
}

/** Does the request's X-CSRF-Token header match the session? */
export function csrfMatches(sessionId: string, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string') return false;
  const want = Buffer.from(csrfTokenOf(sessionId));
  const got = Buffer.from(header);
  return got.length === want.length && timingSafeEqual(got, want);
}

/** The Set-Cookie value of a session, or of its removal (maxAge 0). */
export function sessionCookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  return [
    `${SESSION_COOKIE}=${value}`,
    'Path=/',
    `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`,
    'HttpOnly',
    'SameSite=Strict',
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

/**
 * Who a console session reads the customer API's `read` routes as (the
 * market data: order book, trades, candles): the platform's own account,
 * with the `read` scope alone. An operator sees every account through the
 * admin API anyway; this only lets the console read the market as any
 * client does, with no token of an account in the page. These reads are
 * not counted against the platform account's limit (D18; http/guard.ts):
 * every open console would otherwise share, and spend, that one budget.
 */
export async function consoleReader(q: Queryable): Promise<Principal> {
  const [row] = await q.query<{ organization_id: string }>(
    'SELECT organization_id FROM accounts WHERE id = $1',
    [PLATFORM_ACCOUNT_ID],
  );
  return {
    accountId: PLATFORM_ACCOUNT_ID,
    organizationId: row?.organization_id ?? PLATFORM_ACCOUNT_ID,
    tokenId: 'console',
    scopes: new Set(['read']),
    creditLimitCents: null,
    suspended: false,
  };
}
