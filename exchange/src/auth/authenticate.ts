// Request authentication (D24): a Bearer token on every /v1 request; 401 when
// it is missing or unknown, 403 when it is valid but lacks what the route
// needs. http/guard.ts applies these to each route from its contract.

import { GpuxError } from '@gpux/shared';
import type { TokenScope } from '@gpux/shared';
import type { FastifyRequest } from 'fastify';

import type { Principal } from '../accounts/accounts.js';
import { bearerToken, sameSecret } from './tokens.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the guard of a customer route before the route validates or runs. */
    principal: Principal | null;
    /** Set by the guard of an admin route: who is calling (the audit log's actor). */
    operator: Operator | null;
  }
}

/**
 * Who calls the operators' API: the admin token (GPUX_ADMIN_TOKEN), or an
 * account whose token holds the `admin` scope (a personal operator token).
 */
export interface Operator {
  /** 'admin_token', or the account id of the operator's token. */
  readonly actor: string;
  /** The operator's token id; null for the admin token. */
  readonly tokenId: string | null;
}

/** The actor of the admin token (GPUX_ADMIN_TOKEN) in the audit log. */
export const ADMIN_TOKEN_ACTOR = 'admin_token';

/** A suspended account's tokens are all refused (the operators' API, docs/api/admin.md). */
function refuseSuspended(principal: Principal): void {
  if (principal.suspended) {
    throw new GpuxError('account_suspended', `account ${principal.accountId} is suspended`);
  }
}

/** Where principals come from: accounts/directory.ts. */
export interface Principals {
  principal(token: string): Promise<Principal | undefined>;
}

/** `scope`, or any one of a list of scopes (a route several kinds of token may call). */
export async function authenticate(
  principals: Principals,
  request: FastifyRequest,
  scope: TokenScope | readonly TokenScope[],
): Promise<Principal> {
  const token = bearerToken(request.headers.authorization);
  if (token === undefined) {
    throw new GpuxError('unauthorized', 'send Authorization: Bearer <API token>');
  }
  const principal = await principals.principal(token);
  if (principal === undefined) throw new GpuxError('unauthorized', 'unknown or revoked API token');
  refuseSuspended(principal);
  const any: readonly TokenScope[] = typeof scope === 'string' ? [scope] : scope;
  if (!any.some((s) => principal.scopes.has(s))) {
    throw new GpuxError(
      'forbidden',
      `this token lacks the ${any.map((s) => `"${s}"`).join(' or ')} scope`,
    );
  }
  return principal;
}

/**
 * The operators' API (D31): the admin token from GPUX_ADMIN_TOKEN, or an
 * account token holding the `admin` scope (D24). Any other valid token is
 * 403 forbidden (valid token, missing scope), not 401: the caller is known,
 * it only may not do this. A token that is not even valid stays 401.
 */
export async function authenticateAdmin(
  principals: Principals,
  request: FastifyRequest,
  adminToken: string,
): Promise<Operator> {
  const token = bearerToken(request.headers.authorization);
  if (token === undefined) {
    throw new GpuxError('unauthorized', 'the admin API needs the admin token');
  }
  if (sameSecret(token, adminToken)) return { actor: ADMIN_TOKEN_ACTOR, tokenId: null };
  const principal = await principals.principal(token);
  if (principal === undefined) {
    throw new GpuxError('unauthorized', 'the admin API needs the admin token');
  }
  refuseSuspended(principal);
  if (!principal.scopes.has('admin')) {
    throw new GpuxError(
      'forbidden',
      'this token lacks the "admin" scope; the admin API needs the operators\u2019 token',
    );
  }
  return { actor: principal.accountId, tokenId: principal.tokenId };
}

/** The operator calling an admin route (its guard set it before the handler runs). */
export function operatorOf(request: FastifyRequest): Operator {
  if (request.operator === null) throw new Error('route is not an admin route');
  return request.operator;
}

/** The caller of a customer route (its guard set it before the handler runs). */
export function callerOf(request: FastifyRequest): Principal {
  if (request.principal === null) throw new Error('route is not a customer route');
  return request.principal;
}
