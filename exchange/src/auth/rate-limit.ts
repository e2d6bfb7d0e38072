// D18: rate limits per account (all its tokens together) over a sliding
// minute: 100 queries, 10 order creations, 20 cancellations by default.
// Kept in memory by this exchange process; with several exchanges behind one
// address the counts would have to move to shared state (docs/api/accounts.md).

export type RateKind = 'query' | 'create' | 'cancel';

export interface RateLimits {
  readonly query: number;
  readonly create: number;
  readonly cancel: number;
}

export const DEFAULT_RATE_LIMITS: RateLimits = { query: 100, create: 10, cancel: 20 };

export interface RateDecision {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  /** Whole seconds until the window frees a slot (0 when one is free now). */
  readonly resetSeconds: number;
  /** When the slot was taken (for giveBack). */
  readonly at: number;
}

/**
 * An exact sliding-window log: for each (account, kind) the times of the
 * requests of the last window, oldest first; at most `limit` of them.
 */
export class RateLimiter {
  private readonly logs = new Map<string, number[]>();

  constructor(
    private readonly limits: RateLimits,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  take(accountId: string, kind: RateKind): RateDecision {
    const limit = this.limits[kind];
    const t = this.now();
    const key = `${kind}:${accountId}`;
    let log = this.logs.get(key);
    if (log === undefined) {
      log = [];
      this.logs.set(key, log);
    }
    let expired = 0;
    while (expired < log.length && (log[expired] as number) <= t - this.windowMs) expired++;
    if (expired > 0) log.splice(0, expired);
    const allowed = log.length < limit;
    if (allowed) log.push(t);
    const oldest = log[0];
    const resetSeconds =
      log.length < limit || oldest === undefined
        ? 0
        : Math.ceil((oldest + this.windowMs - t) / 1000);
    return { allowed, limit, remaining: Math.max(0, limit - log.length), resetSeconds, at: t };
  }

  /**
   * Returns a slot taken at `at` (a request that turned out not to count: an
   * idempotent replay, docs/decisions.md D18). Nothing when it has left the window.
   */
  giveBack(accountId: string, kind: RateKind, at: number): void {
    const log = this.logs.get(`${kind}:${accountId}`);
    if (log === undefined) return;
    const i = log.lastIndexOf(at);
    if (i >= 0) log.splice(i, 1);
  }
}
