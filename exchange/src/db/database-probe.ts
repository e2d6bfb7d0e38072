// Does the database answer? GET /readyz's `database` check (issue 23,
// routes/readiness.ts): a `SELECT 1` bounded by a short timeout, its answer
// kept for a second, so that probes however frequent (a load balancer's,
// Kubernetes', several at once) send PostgreSQL at most one query a second
// and never pile queries up: while one has not come back, none is sent.

import type { Queryable } from './database.js';

export const OK = 'ok';

export interface DatabaseProbeOptions {
  /** No answer within this: not reachable (default 1 s). */
  readonly timeoutMs?: number;
  /** An answer is reused this long (default 1 s). */
  readonly cacheMs?: number;
  /** Monotonic ms (tests bring their own). */
  readonly now?: () => number;
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code !== '' ? code : 'no connection';
}

export class DatabaseProbe {
  private last: { readonly at: number; readonly result: string } | undefined;
  /** The query sent and not yet answered (even past its timeout). */
  private inFlight: Promise<string> | undefined;
  /** The answer being waited for now, shared by probes that come meanwhile. */
  private waiting: Promise<string> | undefined;
  private readonly timeoutMs: number;
  private readonly cacheMs: number;
  private readonly now: () => number;

  constructor(
    private readonly db: Queryable,
    o: DatabaseProbeOptions = {},
  ) {
    this.timeoutMs = o.timeoutMs ?? 1_000;
    this.cacheMs = o.cacheMs ?? 1_000;
    this.now = o.now ?? (() => performance.now());
  }

  /** `ok`, or why the database is not reachable now. */
  check(): Promise<string> {
    const last = this.last;
    if (last !== undefined && this.now() - last.at < this.cacheMs)
      return Promise.resolve(last.result);
    this.waiting ??= this.ask().then((result) => {
      this.last = { at: this.now(), result };
      this.waiting = undefined;
      return result;
    });
    return this.waiting;
  }

  private ask(): Promise<string> {
    // A query that went unanswered past its timeout is not sent again on top of it.
    if (this.inFlight !== undefined)
      return Promise.resolve(`no answer to a query sent over ${this.timeoutMs} ms ago`);
    const query = this.db.query('SELECT 1').then(
      () => OK,
      // Its code only (ECONNREFUSED, 57P01): the answer is public, the server's address is not.
      (err: unknown) => `the query failed (${codeOf(err)})`,
    );
    this.inFlight = query;
    void query.finally(() => {
      if (this.inFlight === query) this.inFlight = undefined;
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`no answer within ${this.timeoutMs} ms`), this.timeoutMs);
    });
    return Promise.race([query, timeout]).finally(() => clearTimeout(timer));
  }
}
