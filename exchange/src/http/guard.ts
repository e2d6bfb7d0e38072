// The one place where a route's contract (route-contract.ts) becomes its
// authentication and rate limit. An onRoute hook reads each route's config
// once, when the route is registered, and puts the matching guard first in
// the route's onRequest hooks, so that:
//   - a token is checked (401 / 403, D24) before the body is read or the
//     request validated: a stranger's oversized or malformed body is 401,
//     not 413 or 400, and learns nothing about the schema from validation
//     errors (docs/api/errors.md);
//   - a customer request is counted against its account's limit (D18) before
//     its body is read, so invalid requests count too, and every customer
//     answer carries the X-RateLimit-* headers; past the limit: 429 with
//     Retry-After. An operator's console reading the market with its
//     session cookie is counted nowhere, as the admin API is not. An idempotent replay is not counted (D18): a POST or
//     DELETE with an Idempotency-Key gets its slot back when it replays, and
//     past the limit it is refused only once the key turned out not to be a
//     replay (auth/idempotency.ts; a last preHandler refuses it otherwise);
//   - a public route that says so (`rate: 'address'`) is counted against its
//     client address's limit (http/address-limit.ts); past it: 429 with
//     Retry-After.
// Nothing is looked up per request: the guard is chosen at registration, and
// the other public routes get none. A route whose body is optional
// (`bodyOptional`) gets a first preValidation hook that makes a missing body `{}`. The app's own onRequest hooks (drain, standby) run
// before any route's.

import { GpuxError } from '@gpux/shared';
import type { TokenScope } from '@gpux/shared';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';

import { authenticate, authenticateAdmin } from '../auth/authenticate.js';
import type { Operator } from '../auth/authenticate.js';
import type { RateKind } from '../auth/rate-limit.js';
import { consoleReader, csrfMatches, sessionIdOf, sessionOperator } from '../console/sessions.js';
import type { Principal } from '../accounts/accounts.js';
import type { RouteContext } from '../services.js';
import type { AddressLimiter } from './address-limit.js';
import { contractOf } from './route-contract.js';
import { NoQuery } from './schema.js';
import type { RouteContract } from './route-contract.js';

type Guard = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/** The rate slot a customer request took, or its refusal held back for a possible replay. */
export interface RateSlot {
  /** Past the limit: refused unless the request replays an idempotent answer. */
  readonly refused: boolean;
  /** Give the slot back (the request was a replay). */
  release(): void;
  /** Throw the 429. */
  refuse(): never;
}

declare module 'fastify' {
  interface FastifyRequest {
    rateSlot: RateSlot | null;
  }
}

/** Could this request replay a stored answer (D23)? Then a refusal waits for the key's lookup. */
function mayReplay(request: FastifyRequest): boolean {
  return (
    (request.method === 'POST' || request.method === 'DELETE') &&
    request.headers['idempotency-key'] !== undefined
  );
}

/** The held-back refusal, for a request that did not replay. */
function refuseHeldBack(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: (err?: Error) => void,
): void {
  if (request.rateSlot?.refused !== true) return done();
  try {
    request.rateSlot.refuse();
  } catch (e) {
    done(e as Error);
  }
}

/**
 * `ctx` is read only while a request is handled (never here), so an app
 * built without services (the OpenAPI generator) registers every route.
 */
function customerGuard(
  ctx: RouteContext,
  scope: TokenScope | readonly TokenScope[],
  kind: RateKind,
): Guard {
  return async (request, reply) => {
    const { principal, operator } = await customerOf(ctx, request, scope);
    request.principal = principal;
    // An operator's console reading the market is not a customer's request:
    // like the admin API it is not counted (D18), so the console never
    // spends an account's budget (docs/console.md, "Reading the market").
    if (operator) return;
    // D18: counted before the body is read, so invalid requests count too.
    const d = ctx.limiter.take(principal.accountId, kind);
    reply.header('X-RateLimit-Limit', d.limit);
    reply.header('X-RateLimit-Remaining', d.remaining);
    reply.header('X-RateLimit-Reset', d.resetSeconds);
    const refuse = (): never => {
      throw new GpuxError(
        'rate_limited',
        `at most ${d.limit} such requests per minute; retry in ${d.resetSeconds} s`,
      );
    };
    if (!d.allowed) {
      reply.header('Retry-After', d.resetSeconds);
      if (!mayReplay(request)) refuse();
      request.rateSlot = { refused: true, release: () => undefined, refuse };
      return;
    }
    const { accountId } = principal;
    request.rateSlot = {
      refused: false,
      release: () => ctx.limiter.giveBack(accountId, kind, d.at),
      refuse,
    };
  };
}

/**
 * The caller of a customer route: its Bearer token; or, for a read (scope
 * `read`) sent with the console's session cookie and no token, the
 * platform's account reading (console/sessions.ts consoleReader) for an
 * operator (`operator`: not counted against any account's limit).
 */
async function customerOf(
  ctx: RouteContext,
  request: FastifyRequest,
  scope: TokenScope | readonly TokenScope[],
): Promise<{ principal: Principal; operator: boolean }> {
  const sessionId =
    scope === 'read' && request.headers.authorization === undefined
      ? sessionIdOf(request.headers.cookie)
      : undefined;
  if (sessionId === undefined) {
    return { principal: await authenticate(ctx.directory, request, scope), operator: false };
  }
  if ((await sessionOperator(ctx.db, ctx.adminToken, sessionId)) === undefined) {
    throw new GpuxError('unauthorized', 'the console session has ended; sign in again');
  }
  const reads = request.method === 'GET' || request.method === 'HEAD';
  if (!reads) throw new GpuxError('forbidden', 'the console session only reads the market');
  return { principal: await consoleReader(ctx.db), operator: true };
}

function addressGuard(limiter: AddressLimiter): Guard {
  return async (request, reply) => {
    const d = limiter.take(request.ip);
    if (d.allowed) return;
    reply.header('Retry-After', d.retryAfterSeconds);
    throw new GpuxError(
      'rate_limited',
      `at most ${limiter.perMinute} requests per minute from one address to the public endpoints; retry in ${d.retryAfterSeconds} s`,
    );
  };
}

/**
 * The operator of an admin request: its Bearer token, or else the console's
 * session cookie (console/sessions.ts), which must come with the session's
 * X-CSRF-Token on anything but a read.
 */
async function operatorOfRequest(ctx: RouteContext, request: FastifyRequest): Promise<Operator> {
  const sessionId =
    request.headers.authorization === undefined ? sessionIdOf(request.headers.cookie) : undefined;
  if (sessionId === undefined) {
    return authenticateAdmin(ctx.directory, request, ctx.adminToken);
  }
  const session = await sessionOperator(ctx.db, ctx.adminToken, sessionId);
  if (session === undefined) {
    throw new GpuxError('unauthorized', 'the console session has ended; sign in again');
  }
  const reads = request.method === 'GET' || request.method === 'HEAD';
  if (!reads && !csrfMatches(sessionId, request.headers['x-csrf-token'])) {
    throw new GpuxError(
      'csrf_token_invalid',
      'send the session’s CSRF token (GET /v1/console/session) in X-CSRF-Token',
    );
  }
  return { actor: session.actor, tokenId: session.tokenId };
}

function adminGuard(ctx: RouteContext): Guard {
  // D18: the admin API is not rate limited.
  return async (request, reply) => {
    const operator = await operatorOfRequest(ctx, request);
    request.operator = operator;
    // Every line logged for the request from now on, "request completed"
    // too, names the operator (the audit log's actor).
    const log = request.log.child({
      operator: operator.actor,
      ...(operator.tokenId === null ? {} : { operator_token_id: operator.tokenId }),
    });
    request.log = log;
    reply.log = log;
  };
}

function guardOf(
  ctx: RouteContext,
  addresses: AddressLimiter,
  contract: RouteContract,
): Guard | undefined {
  switch (contract.access) {
    case 'customer':
      return customerGuard(ctx, contract.scope, contract.rate);
    case 'admin':
      return adminGuard(ctx);
    case 'public':
      return contract.rate === 'address' ? addressGuard(addresses) : undefined;
  }
}

/** A request of a `bodyOptional` route sent without a body: validated as `{}`. */
function emptyBody(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  request.body ??= {};
  done();
}

/**
 * Installs the guard of every route registered on `app` from now on (call it
 * before the routes). A route without a valid contract throws here, at
 * start-up, rather than being served unguarded.
 */
export function routeGuards(
  app: FastifyInstance,
  ctx: RouteContext,
  /** The public endpoints' limit: from the configuration alone, so an app without services has it too. */
  addresses: AddressLimiter,
): void {
  app.decorateRequest('rateSlot', null);
  app.addHook('onRoute', (route: RouteOptions) => {
    const contract = contractOf(route.method, route.url, route.config);
    // docs/api/errors.md: an unknown parameter is refused, never silently
    // dropped; an API route that declares no query takes none.
    if (route.url.startsWith('/v1/') && route.schema?.querystring === undefined) {
      route.schema = { ...route.schema, querystring: NoQuery };
    }
    if (contract.bodyOptional === true) {
      const pre = route.preValidation;
      route.preValidation = [
        emptyBody,
        ...(pre === undefined ? [] : Array.isArray(pre) ? pre : [pre]),
      ];
    }
    const guard = guardOf(ctx, addresses, contract);
    if (guard === undefined) return;
    if (contract.access === 'customer') {
      // Last of the route's preHandlers: a refusal held back for a replay
      // that did not happen is a 429 before the handler runs.
      const pre = route.preHandler;
      route.preHandler = [
        ...(pre === undefined ? [] : Array.isArray(pre) ? pre : [pre]),
        refuseHeldBack,
      ];
    }
    const existing = route.onRequest;
    // A new array: Fastify's HEAD route for a GET starts from the options as
    // they were given and gets its own guard when its onRoute runs.
    route.onRequest =
      existing === undefined
        ? [guard]
        : [guard, ...(Array.isArray(existing) ? existing : [existing])];
  });
}
