// The public endpoints need no token, so they are counted per client
// address instead of per account (docs/api/market-data.md, "Limits"): a
// token bucket per address holding `perMinute` requests, refilled at
// `perMinute` a minute, so a client may come in a burst and then at the
// steady rate. The health probes are not counted (a load balancer's checks
// must never be refused). The address is the TCP peer's: behind a proxy,
// the proxy's. Kept in memory by this process.

export const DEFAULT_PUBLIC_RATE_PER_MINUTE = 120;

/** Buckets are looked over for full ones (forgotten) once there are this many. */
const SWEEP_AT = 10_000;

export interface AddressDecision {
  readonly allowed: boolean;
  /** Whole seconds until a request is allowed again (0 when one is now). */
  readonly retryAfterSeconds: number;
}

export class AddressLimiter {
  private readonly buckets = new Map<string, { tokens: number; atMs: number }>();
  private readonly perMs: number;

  constructor(
    readonly perMinute: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.perMs = perMinute / 60_000;
  }

  take(address: string): AddressDecision {
    const t = this.now();
    let b = this.buckets.get(address);
    if (b === undefined) {
      if (this.buckets.size >= SWEEP_AT) this.sweep(t);
      b = { tokens: this.perMinute, atMs: t };
      this.buckets.set(address, b);
    } else {
      b.tokens = Math.min(this.perMinute, b.tokens + (t - b.atMs) * this.perMs);
      b.atMs = t;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return { allowed: true, retryAfterSeconds: 0 };
    }
    return { allowed: false, retryAfterSeconds: Math.ceil((1 - b.tokens) / this.perMs / 1000) };
  }

  /** Forget the addresses whose bucket has filled up again: they are as new. */
  private sweep(t: number): void {
    for (const [address, b] of this.buckets) {
      if (b.tokens + (t - b.atMs) * this.perMs >= this.perMinute) this.buckets.delete(address);
    }
  }
}
