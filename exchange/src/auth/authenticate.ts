// Request authentication (D24): a Bearer token on every /v1 request; 401 when
// it is missing or unknown, 403 when it lacks the route's scope.

import { GpuxError } from '@gpux/shared';
import type { TokenScope } from '@gpux/shared';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

import type { Principal } from '../accounts/accounts.js';
import type { RateKind, RateLimiter } from './rate-limit.js';
import { bearerToken, sameSecret } from './tokens.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the `requireScope` hook before the route validates or runs. */
    principal: Principal | null;
  }
}

/** Where principals come from: accounts/directory.ts. */
export interface Principals {
  principal(token: string): Promise<Principal | undefined>;
}

export async function authenticate(
  principals: Principals,
  request: FastifyRequest,
  scope: TokenScope,
): Promise<Principal> {
  const token = bearerToken(request.headers.authorization);
  if (token === undefined) {
    throw new GpuxError('unauthorized', 'send Authorization: Bearer <API token>');
  }
  const principal = await principals.principal(token);
  if (principal === undefined) throw new GpuxError('unauthorized', 'unknown or revoked API token');
  if (!principal.scopes.has(scope)) {
    throw new GpuxError('forbidden', `this token lacks the "${scope}" scope`);
  }
  return principal;
}

/** The operators' API (D31): the admin token from GPUX_ADMIN_TOKEN. */
export function authenticateAdmin(request: FastifyRequest, adminToken: string): void {
  const token = bearerToken(request.headers.authorization);
  if (token === undefined || !sameSecret(token, adminToken)) {
    throw new GpuxError('unauthorized', 'the admin API needs the admin token');
  }
}

/**
 * A preValidation hook for admin routes: the token is checked before the body,
 * so a stranger learns nothing about the schema from validation errors.
 */
export function adminOnly(
  adminToken: string,
): (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void {
  return (request, _reply, done) => {
    try {
      authenticateAdmin(request, adminToken);
      done();
    } catch (err) {
      done(err as Error);
    }
  };
}

/**
 * A preValidation hook for customer routes: authenticate (401 / 403) and
 * count against the account's rate limit (429, D18) before the request is
 * validated (400), then hand the caller to the handler as `request.principal`.
 */
export function requireScope(
  principals: Principals,
  limiter: RateLimiter,
  scope: TokenScope,
  kind: RateKind = 'query',
): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  return async (request, reply) => {
    const principal = await authenticate(principals, request, scope);
    request.principal = principal;
    // D18: counted before validation, so invalid requests count too.
    const d = limiter.take(principal.accountId, kind);
    reply.header('X-RateLimit-Limit', d.limit);
    reply.header('X-RateLimit-Remaining', d.remaining);
    reply.header('X-RateLimit-Reset', d.resetSeconds);
    if (!d.allowed) {
      reply.header('Retry-After', d.resetSeconds);
      throw new GpuxError(
        'rate_limited',
        `at most ${d.limit} such requests per minute; retry in ${d.resetSeconds} s`,
      );
    }
  };
}

/** The caller of a route guarded by `requireScope`. */
export function callerOf(request: FastifyRequest): Principal {
  if (request.principal === null) throw new Error('route is not guarded by requireScope');
  return request.principal;
}
