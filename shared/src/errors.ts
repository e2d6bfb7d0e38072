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
    meaning: 'The request is malformed or a parameter is out of range.',
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
    meaning: 'The order would take the account past its credit limit.',
    decision: 'D3',
  },
  forbidden: {
    status: 403,
    meaning: 'The token lacks the scope this request needs.',
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
  self_trade_prevented: {
    status: 409,
    meaning: 'The order would trade with its own organization; nothing filled.',
    decision: 'D17',
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
    meaning: 'The account exceeded a rate limit; see Retry-After.',
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

/** D19 envelope. Details cannot overwrite `code` or `message`. */
export function errorBody(err: GpuxError): ErrorBody {
  return { data: null, error: { ...err.details, code: err.code, message: err.message } };
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
