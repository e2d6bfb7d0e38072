// Figures for the bench: throughput from one wall-clock measure around a whole
// run, latency percentiles from per-command samples in nanoseconds.

export interface LatencySummary {
  readonly samples: number;
  /** Microseconds. */
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
  readonly mean: number;
}

/** Nearest-rank percentile of an ascending array; `q` in (0, 1]. */
export function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil(q * sorted.length);
  const i = Math.min(sorted.length - 1, Math.max(0, rank - 1));
  return sorted[i] ?? NaN;
}

/** Sorts `samplesNs` in place and summarises it in microseconds. */
export function summarize(samplesNs: Float64Array): LatencySummary {
  samplesNs.sort();
  let sum = 0;
  for (let i = 0; i < samplesNs.length; i++) sum += samplesNs[i] ?? 0;
  const us = (ns: number): number => ns / 1000;
  return {
    samples: samplesNs.length,
    p50: us(percentile(samplesNs, 0.5)),
    p99: us(percentile(samplesNs, 0.99)),
    p999: us(percentile(samplesNs, 0.999)),
    max: us(samplesNs[samplesNs.length - 1] ?? NaN),
    mean: samplesNs.length === 0 ? NaN : us(sum / samplesNs.length),
  };
}

/** Commands per second from a command count and a duration in nanoseconds. */
export function perSecond(commands: number, ns: bigint): number {
  return commands / (Number(ns) / 1e9);
}

/** Orders per second, rounded to a whole number (to the thousand above 100k). */
export function fmtRate(perSec: number): string {
  if (!Number.isFinite(perSec)) return String(perSec);
  const r = perSec >= 100_000 ? Math.round(perSec / 1000) * 1000 : Math.round(perSec);
  return String(r);
}

/** Microseconds with two decimals below 100, whole above. */
export function fmtUs(us: number): string {
  if (!Number.isFinite(us)) return String(us);
  return us >= 100 ? us.toFixed(0) : us.toFixed(2);
}

export function fmtRatio(r: number): string {
  if (!Number.isFinite(r)) return String(r);
  return r >= 10 ? r.toFixed(1) : r.toFixed(2);
}

export function fmtLatency(s: LatencySummary): string {
  return `p50 ${fmtUs(s.p50)} p99 ${fmtUs(s.p99)} p99.9 ${fmtUs(s.p999)} max ${fmtUs(s.max)} us`;
}

/** A small counter keyed by string, printed sorted by key. */
export class Counter {
  private readonly counts = new Map<string, number>();

  add(key: string, n = 1): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + n);
  }

  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  total(): number {
    let t = 0;
    for (const v of this.counts.values()) t += v;
    return t;
  }

  toString(): string {
    if (this.counts.size === 0) return 'none';
    return [...this.counts.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
  }
}
