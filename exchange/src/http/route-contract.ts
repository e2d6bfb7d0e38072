// Who may call a route and how it is counted, declared once per route in its
// Fastify `config`:
//
//   config: { access: 'customer', scope: 'trade', rate: 'create' }   // D24 scope, D18 class
//   config: { access: 'customer', scope: ['trade', 'provider'], ... } // any of these scopes
//   config: { access: 'admin' }                                      // D31 operators
//   config: { access: 'public' }                                     // no token
//   config: { access: 'public', rate: 'address' }                    // no token, counted per address
//
// plus, optionally, `errors`: the catalogue codes the handler itself can
// refuse with (those of authentication, rate limits, validation and
// idempotency follow from the rest and are not listed), and `bodyOptional`:
// a request without a body is taken as one with `{}` (the document says the
// body is not required). guard.ts turns the
// contract into the route's authentication and rate limit; openapi.ts into
// the document's security, headers, parameters and error responses. A route
// without a valid contract is refused when it is registered.

import { ERROR_CODES, isErrorCode, isTokenScope } from '@gpux/shared';
import type { ErrorCode, TokenScope } from '@gpux/shared';

import type { RateKind } from '../auth/rate-limit.js';

export type RouteAccess = 'customer' | 'admin' | 'public';

interface ContractBase {
  /** Refusals of the handler beyond what access and input imply, for the document. */
  readonly errors?: readonly ErrorCode[];
  /** No body at all is an empty one (`{}`). */
  readonly bodyOptional?: true;
}

export interface CustomerContract extends ContractBase {
  readonly access: 'customer';
  /** D24: the scope the caller's token needs, or a list of which it needs one (403 without). */
  readonly scope: TokenScope | readonly TokenScope[];
  /** D18: which per-account limit the request counts against. */
  readonly rate: RateKind;
}

export interface AdminContract extends ContractBase {
  readonly access: 'admin';
}

export interface PublicContract extends ContractBase {
  readonly access: 'public';
  /** Counted against the client address's limit (http/address-limit.ts); else not counted. */
  readonly rate?: 'address';
}

export type RouteContract = CustomerContract | AdminContract | PublicContract;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route (http/route-contract.ts). */
    access?: RouteAccess;
    /** Customer routes: the token scope needed (D24), or a list of which one is needed. */
    scope?: TokenScope | readonly TokenScope[];
    /** Customer routes: the D18 rate class; public routes: 'address' to be counted per address. */
    rate?: RateKind | 'address';
    /** Catalogue codes the handler can refuse with (documented per route). */
    errors?: readonly ErrorCode[];
    /** A request without a body is validated and handled as one with `{}`. */
    bodyOptional?: boolean;
  }
}

const RATE_KINDS: readonly RateKind[] = ['query', 'create', 'cancel'];

export class RouteContractError extends Error {
  override readonly name = 'RouteContractError';
}

/**
 * The contract of a route from its config, or a RouteContractError naming
 * the route: a route that does not say who may call it must not be served.
 */
export function contractOf(
  method: string | readonly string[],
  url: string,
  config: unknown,
): RouteContract {
  const where = `${[method].flat().join(',')} ${url}`;
  const c = (typeof config === 'object' && config !== null ? config : {}) as Record<
    string,
    unknown
  >;
  const errors = c['errors'];
  if (errors !== undefined && (!Array.isArray(errors) || !errors.every(isErrorCode))) {
    throw new RouteContractError(`${where}: config.errors must list catalogue codes`);
  }
  const bodyOptional = c['bodyOptional'];
  if (bodyOptional !== undefined && typeof bodyOptional !== 'boolean') {
    throw new RouteContractError(`${where}: config.bodyOptional must be true or false`);
  }
  const base: ContractBase = {
    ...(errors === undefined ? {} : { errors }),
    ...(bodyOptional === true ? { bodyOptional } : {}),
  };
  switch (c['access']) {
    case 'customer': {
      const scope = c['scope'];
      const rate = c['rate'];
      const scopeOk = Array.isArray(scope)
        ? scope.length > 0 && scope.every(isTokenScope)
        : isTokenScope(scope);
      if (!scopeOk || !RATE_KINDS.includes(rate as RateKind)) {
        throw new RouteContractError(
          `${where}: a customer route needs config.scope (a token scope) and config.rate (${RATE_KINDS.join(', ')})`,
        );
      }
      return {
        ...base,
        access: 'customer',
        scope: scope as TokenScope | readonly TokenScope[],
        rate: rate as RateKind,
      };
    }
    case 'admin':
      if (c['scope'] !== undefined || c['rate'] !== undefined) {
        throw new RouteContractError(`${where}: only customer routes take a scope or a rate`);
      }
      return { ...base, access: 'admin' };
    case 'public':
      if (c['scope'] !== undefined || (c['rate'] !== undefined && c['rate'] !== 'address')) {
        throw new RouteContractError(
          `${where}: a public route takes no scope, and no rate but 'address'`,
        );
      }
      return { ...base, access: 'public', ...(c['rate'] === 'address' ? { rate: 'address' } : {}) };
    default:
      throw new RouteContractError(
        `${where}: config.access must say who may call the route ('customer', 'admin' or 'public')`,
      );
  }
}

/** The HTTP statuses of a list of codes, each with its codes, in status order. */
export function codesByStatus(codes: Iterable<ErrorCode>): Map<number, ErrorCode[]> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = ERROR_CODES[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return new Map([...byStatus].sort(([a], [b]) => a - b));
}
