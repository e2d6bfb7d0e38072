// The exit codes of the API commands (issue 24, docs/cli.md): what a script
// can tell apart without reading stderr. The API's answer decides the code
// by its HTTP status; the message printed is the API's own code and message.

export const EXIT = {
  ok: 0,
  /** Bad usage (a flag missing or malformed), and the API's 400 and 413. */
  usage: 2,
  /** 401 or 403, and no login to use. */
  unauthorized: 3,
  notFound: 4,
  /** 409 and 422: the request conflicts with the state of what it names. */
  conflict: 5,
  /** 402. */
  insufficientFunds: 6,
  /** 429. */
  rateLimited: 7,
  /** 5xx, an answer the command cannot read, or no answer at all. */
  server: 8,
  /** `buy --wait`: --wait-timeout passed; the order was left as it was (resting). */
  waitTimeout: 9,
  /** Ctrl-C while a command waited (128 + SIGINT, as shells report it). */
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The exit code an API answer with HTTP `status` (not 2xx) ends the command with. */
export function exitCodeOf(status: number): ExitCode {
  switch (status) {
    case 400:
    case 413:
      return EXIT.usage;
    case 401:
    case 403:
      return EXIT.unauthorized;
    case 402:
      return EXIT.insufficientFunds;
    case 404:
      return EXIT.notFound;
    case 409:
    case 422:
      return EXIT.conflict;
    case 429:
      return EXIT.rateLimited;
    default:
      return EXIT.server;
  }
}

/** A failure the command reports on stderr (one or more lines) and exits with. */
export class CliError extends Error {
  override readonly name: string = 'CliError';
  constructor(
    message: string,
    readonly exitCode: ExitCode,
  ) {
    super(message);
  }
}

/** The command line itself is wrong; nothing was sent. */
export class UsageError extends CliError {
  override readonly name = 'UsageError';
  constructor(message: string) {
    super(message, EXIT.usage);
  }
}

/** One problem of a refused field, as docs/api/errors.md lists them. */
interface FieldProblem {
  readonly field?: unknown;
  readonly message?: unknown;
}

/** The API answered with an error (docs/api/errors.md): its code, message and status. */
export class ApiError extends CliError {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    readonly apiMessage: string,
    /** Every field problem of an invalid_request, one message each. */
    readonly problems: readonly string[],
    /** Retry-After, as sent (seconds or an HTTP date), when there was one. */
    readonly retryAfter: string | null,
  ) {
    super(`${code}: ${apiMessage}`, exitCodeOf(status));
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The ApiError of an answer with `status` whose body parsed as `body` (JSON,
 * or the text when it was not JSON): the envelope's code and message, or,
 * for an answer without one (a proxy's page), `http_<status>` and its text.
 */
export function apiError(status: number, body: unknown, retryAfter: string | null): ApiError {
  const error = isRecord(body) ? body['error'] : undefined;
  if (isRecord(error) && typeof error['code'] === 'string') {
    const message = typeof error['message'] === 'string' ? error['message'] : '';
    const problems = Array.isArray(error['errors'])
      ? (error['errors'] as FieldProblem[])
          .map((p) => (typeof p.message === 'string' ? p.message : ''))
          .filter((m) => m !== '')
      : [];
    return new ApiError(status, error['code'], message, problems, retryAfter);
  }
  const text = typeof body === 'string' ? body.trim().slice(0, 200) : '';
  return new ApiError(
    status,
    `http_${status}`,
    text || 'the answer had no error body',
    [],
    retryAfter,
  );
}

/** When to retry, in words, from a Retry-After header (seconds or an HTTP date) and the time now. */
export function retryWhen(retryAfter: string, now: number): string {
  if (/^\d+$/.test(retryAfter.trim())) {
    const s = Number(retryAfter.trim());
    return s === 1 ? 'in 1 second' : `in ${s} seconds`;
  }
  const at = Date.parse(retryAfter);
  if (Number.isNaN(at)) return `after ${retryAfter}`;
  return `in ${Math.max(0, Math.ceil((at - now) / 1000))} seconds`;
}

/** The lines a failure prints on stderr, each starting with `gpux: `. */
export function errorLines(e: CliError, now: number): string[] {
  if (!(e instanceof ApiError)) return e.message.split('\n').map((l) => `gpux: ${l}`);
  const lines = [`gpux: ${e.code}: ${e.apiMessage} (HTTP ${e.status})`];
  // The message already joins the problems; the list shows one a line.
  if (e.problems.length > 1) for (const p of e.problems) lines.push(`gpux:   - ${p}`);
  if (e.status === 429) {
    lines.push(
      e.retryAfter === null
        ? 'gpux: rate limited: retry later'
        : `gpux: rate limited: retry ${retryWhen(e.retryAfter, now)}`,
    );
  }
  return lines;
}

/** A request that got no answer: nothing listening, DNS, TLS, a reset. */
export function networkError(url: string, err: unknown): CliError {
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  const detail =
    cause instanceof Error
      ? ((cause as NodeJS.ErrnoException).code ?? cause.message)
      : String(cause);
  return new CliError(`cannot reach the exchange at ${url}: ${detail}`, EXIT.server);
}

/** A program gpux ran (OpenSSH) ended: gpux exits with its status, printing nothing more. */
export class ChildExit extends Error {
  override readonly name = 'ChildExit';
  constructor(readonly status: number) {
    super(`exited with ${status}`);
  }
}
