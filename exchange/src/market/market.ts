// The exchange's books: one writer per (gpu_type, zone), all rebuilt from
// PostgreSQL before traffic (architecture.md flow 5), and a clock that makes
// time pass in every book (expiry, scheduled orders, lease ends).
//
// This is the seam where "the single writer of book X" could later live in
// another process (architecture.md, beyond one machine): routes only call
// `writer(gpuType, zone).submit(...)`.

import { GPU_TYPES, ZONES } from '@gpux/shared';
import type { GpuType, Zone } from '@gpux/shared';

import type { Database } from '../db/database.js';
import type { BookStateOptions } from './book-state.js';
import { BookWriter, CommitGroup } from './book-writer.js';

export interface Clock {
  now(): number;
}

export const SYSTEM_CLOCK: Clock = { now: () => Date.now() };

export interface MarketOptions extends BookStateOptions {
  /** How often time is made to pass in idle books; 0: never (tests tick by hand). */
  readonly tickIntervalMs: number;
  readonly clock: Clock;
}

export const DEFAULT_MARKET_OPTIONS: MarketOptions = {
  provisioningTimeoutMs: 5 * 60_000,
  tickIntervalMs: 1000,
  clock: SYSTEM_CLOCK,
};

export class Market {
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;

  private constructor(
    private readonly writers: ReadonlyMap<string, BookWriter>,
    readonly clock: Clock,
  ) {}

  static async open(db: Database, options: Partial<MarketOptions> = {}): Promise<Market> {
    const o = { ...DEFAULT_MARKET_OPTIONS, ...options };
    const writers = new Map<string, BookWriter>();
    const group = new CommitGroup(db);
    for (const gpuType of GPU_TYPES) {
      for (const zone of ZONES) {
        writers.set(`${gpuType}/${zone}`, await BookWriter.open(db, group, gpuType, zone, o));
      }
    }
    const market = new Market(writers, o.clock);
    if (o.tickIntervalMs > 0) {
      market.timer = setInterval(() => void market.tickAll(), o.tickIntervalMs);
      market.timer.unref();
    }
    return market;
  }

  writer(gpuType: GpuType, zone: Zone): BookWriter {
    const w = this.writers.get(`${gpuType}/${zone}`);
    if (w === undefined) throw new Error(`no book ${gpuType}/${zone}`);
    return w;
  }

  /** Let time pass in every book; resolves once every book has committed. */
  async tickAll(now: number = this.clock.now()): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      await Promise.all(
        [...this.writers.values()].map((w) =>
          w.submit((state, changes) => state.tick(now, changes)).catch(() => undefined),
        ),
      );
    } finally {
      this.ticking = false;
    }
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    await Promise.all([...this.writers.values()].map((w) => w.close()));
  }
}
