// The error catalogue: every code the API can answer with, its HTTP status and
// meaning, in one place (decisions D19, D20). docs/api/errors.md mirrors it and
// errors.test.ts fails when the two drift apart.

interface CatalogueEntry {
  readonly status: number;
  readonly meaning: string;
  /** The decision that introduces or settles the code. */
  readonly decision: string;
}

export const ERROR_CODES = {
  invalid_request: {
    status: 400,
    meaning:
      'The request is malformed, or fields of it break a rule: `field` and `errors` name them.',
    decision: 'D5',
  },
  price_out_of_collar: {
    status: 400,
    meaning: 'The limit price is more than 50% away from the reference price.',
    decision: 'D15',
  },
  order_value_too_low: {
    status: 400,
    meaning: 'gpu_count × duration_hours × price is below $10.',
    decision: 'D16',
  },
  unauthorized: {
    status: 401,
    meaning: 'The API token is missing or invalid.',
    decision: 'D24',
  },
  insufficient_funds: {
    status: 402,
    meaning:
      'The order would take the account past its credit limit, or a payout is above the balance.',
    decision: 'D3',
  },
  forbidden: {
    status: 403,
    meaning: 'The token lacks the scope this request needs.',
    decision: 'D24',
  },
  account_suspended: {
    status: 403,
    meaning: 'The token’s account is suspended by an operator; every token of it is refused.',
    decision: 'D24',
  },
  csrf_token_invalid: {
    status: 403,
    meaning:
      'A change sent with the console’s session cookie lacks the session’s X-CSRF-Token header, or it does not match.',
    decision: 'D24',
  },
  not_found: {
    status: 404,
    meaning: 'No such resource visible to the calling account.',
    decision: 'D24',
  },
  order_already_filled: {
    status: 409,
    meaning: 'The order is fully filled and cannot be cancelled; terminate the lease.',
    decision: 'D20',
  },
  lease_not_active: {
    status: 409,
    meaning: 'The lease is already terminated, expired or failed.',
    decision: 'D26',
  },
  lease_not_ready: {
    status: 409,
    meaning: 'The lease is still provisioning; its access details do not exist yet.',
    decision: 'D20',
  },
  ssh_key_exists: {
    status: 409,
    meaning: 'This public key is already registered to the account: `ssh_key_id` names it.',
    decision: 'D32',
  },
  lease_not_provisioning: {
    status: 409,
    meaning: 'Only a lease still provisioning can be failed; this one is not.',
    decision: 'D25',
  },
  insufficient_liquidity: {
    status: 409,
    meaning: 'A market order cannot fill within the price collar; nothing happened.',
    decision: 'D10',
  },
  insufficient_capacity: {
    status: 409,
    meaning: 'The cluster has fewer free nodes than the sell order offers.',
    decision: 'D31',
  },
  cluster_cordoned: {
    status: 409,
    meaning:
      'The cluster is cordoned (by an operator, or by its provider): it takes no new sell or resale until it is uncordoned; a provider cannot lift an operator’s cordon.',
    decision: 'D31',
  },
  self_trade_prevented: {
    status: 409,
    meaning: 'The order would trade with its own organization; nothing filled.',
    decision: 'D17',
  },
  market_halted: {
    status: 409,
    meaning: 'An operator halted this book: it takes no new orders; open ones can be cancelled.',
    decision: 'D20',
  },
  idempotency_key_in_progress: {
    status: 409,
    meaning: 'A request with this Idempotency-Key is still running.',
    decision: 'D23',
  },
  payload_too_large: {
    status: 413,
    meaning: 'The request body is over 64 KiB.',
    decision: 'D20',
  },
  idempotency_key_reused: {
    status: 422,
    meaning: 'This Idempotency-Key was used with a different request body.',
    decision: 'D23',
  },
  rate_limited: {
    status: 429,
    meaning:
      'A rate limit was exceeded: the account’s, or the client address’s on the public endpoints; see Retry-After.',
    decision: 'D18',
  },
  internal_error: {
    status: 500,
    meaning: 'An unexpected server error; no details are disclosed.',
    decision: 'D20',
  },
  unavailable: {
    status: 503,
    meaning: 'The exchange is shutting down or cannot serve now; retry shortly.',
    decision: 'D34',
  },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function isErrorCode(x: unknown): x is ErrorCode {
  return typeof x === 'string' && Object.hasOwn(ERROR_CODES, x);
}

/** Extra fields shown beside `code` and `message`, e.g. `{ missing_gpus: 8 }`. */
export type ErrorDetails = Readonly<Record<string, unknown>>;

export interface GpuxErrorOptions {
  readonly details?: ErrorDetails;
  readonly cause?: unknown;
}

export class GpuxError extends Error {
  override readonly name: string = 'GpuxError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: ErrorDetails | undefined;

  constructor(code: ErrorCode, message: string, options: GpuxErrorOptions = {}) {
    super(message, 'cause' in options ? { cause: options.cause } : undefined);
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.details = options.details;
  }
}

export interface ErrorBody {
  readonly data: null;
  readonly error: { readonly code: ErrorCode; readonly message: string } & ErrorDetails;
}

/** D19 envelope: code and message first, then the details, which cannot overwrite them. */
export function errorBody(err: GpuxError): ErrorBody {
  const { code: _code, message: _message, ...details } = err.details ?? {};
  return { data: null, error: { code: err.code, message: err.message, ...details } };
}

// Validation problems (docs/api/errors.md, "Validation errors"). An
// invalid_request about the request's own fields names each field, the rule
// it broke and, for a closed set, the values it allows, as Stripe's `param`
// does; every problem found is reported, not only the first.

/** The rules a request field can break, stable for programs (docs/api/errors.md). */
export const FIELD_RULES = [
  /** Missing, or needed because of another field (a sell needs limit_price). */
  'required',
  /** The wrong JSON type (a string for a number, a fraction for an integer). */
  'type',
  /** Not one of `allowed`. */
  'enum',
  /** Below `limit` (or, for a price, not above it). */
  'minimum',
  /** Above `limit`. */
  'maximum',
  /** Not a multiple of `limit`: gpu_count in whole 8-GPU nodes, money in whole cents. */
  'multiple_of',
  /** Shorter than `limit` characters. */
  'min_length',
  /** Longer than `limit` characters. */
  'max_length',
  /** Does not have the form the field takes (a time, a host name, an instance type, a key). */
  'format',
  /** A field the request does not take; `allowed` lists those it takes. */
  'unknown_field',
  /** Fewer than `limit` items. */
  'min_items',
  /** More than `limit` items. */
  'max_items',
  /** The same item twice. */
  'unique_items',
  /** Contradicts another field of the request, or does not apply with it. */
  'conflict',
  /** Well formed but not acceptable, for the reason the message gives (a key already registered). */
  'invalid',
] as const;
export type FieldRule = (typeof FIELD_RULES)[number];

/** A value an `enum` problem allows. */
export type AllowedValue = string | number | boolean | null;

/** One problem with one field of a request. */
export interface FieldProblem {
  /**
   * The field as a client names it: `gpu_type`, `nodes[2].hostname` in a
   * body, a query or a path parameter. Absent when the problem is the whole
   * body (not a JSON object).
   */
  readonly field?: string;
  readonly rule: FieldRule;
  /** For people: names the field, says the rule and the values it allows. */
  readonly message: string;
  /** enum: the values allowed; unknown_field: the fields the request takes. */
  readonly allowed?: readonly AllowedValue[];
  /** minimum, maximum, multiple_of, min_length, max_length, min_items, max_items: the bound. */
  readonly limit?: number;
}

/** How many problems an answer lists; the message says when there were more. */
export const MAX_FIELD_PROBLEMS = 20;

/**
 * invalid_request about the request's fields: `details.field` is the first
 * problem's field and `details.errors` lists every problem (at most
 * MAX_FIELD_PROBLEMS); the message joins the problems' messages.
 */
export class ValidationError extends GpuxError {
  override readonly name: string = 'ValidationError';
  readonly problems: readonly FieldProblem[];

  constructor(problems: readonly FieldProblem[], options: { readonly cause?: unknown } = {}) {
    const [first] = problems;
    if (first === undefined) throw new RangeError('a ValidationError needs a problem');
    const shown = problems.slice(0, MAX_FIELD_PROBLEMS);
    const more = problems.length - shown.length;
    const message =
      shown.map((p) => p.message).join('; ') +
      (more > 0 ? `; and ${more} more problem${more === 1 ? '' : 's'}` : '');
    super('invalid_request', message, {
      ...options,
      details: { ...(first.field === undefined ? {} : { field: first.field }), errors: shown },
    });
    this.problems = problems;
  }
}

/** One problem with one field, as an error to throw. */
export function fieldError(
  field: string,
  rule: FieldRule,
  message: string,
  extra: Pick<FieldProblem, 'allowed' | 'limit'> = {},
): ValidationError {
  return new ValidationError([{ field, rule, message, ...extra }]);
}

/**
 * Gathers the problems of checks that run one after another (the checks of
 * a request's fields after its schema), so that one answer reports them all.
 */
export class FieldProblems {
  private readonly found: FieldProblem[] = [];

  add(problem: FieldProblem): void {
    this.found.push(problem);
  }

  /**
   * `parse()`'s value, or undefined when it threw a ValidationError, whose
   * problems are kept. Any other error is not the client's and goes on.
   */
  take<T>(parse: () => T): T | undefined {
    try {
      return parse();
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      this.found.push(...err.problems);
      return undefined;
    }
  }

  get any(): boolean {
    return this.found.length > 0;
  }

  /** Throws a ValidationError of every problem gathered, if there is one. */
  throwIfAny(): void {
    if (this.found.length > 0) throw new ValidationError(this.found);
  }
}

/**
 * A rule the code itself guarantees was broken: a bug, never a refusal of a
 * request. Whoever catches one must assume the state it was changing is
 * half-changed (the book writer rebuilds its book from the database).
 */
export class InvariantError extends Error {
  override readonly name = 'InvariantError';

  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
  }
}
