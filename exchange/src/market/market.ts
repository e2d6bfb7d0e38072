// The exchange's books: one writer per (gpu_type, zone), all rebuilt from
// PostgreSQL before traffic (docs/architecture.md flow 5), and a clock that makes
// time pass in every book (expiry, scheduled orders, lease ends).
//
// This is the seam where "the single writer of book X" could later live in
// another process (docs/architecture.md, beyond one machine): routes only call
// `writer(gpuType, zone).submit(...)`.

import { GPU_TYPES, InvariantError, ZONES } from '@gpux/shared';
import type { GpuType, Zone } from '@gpux/shared';

import type { Database } from '../db/database.js';
import { DEFAULT_FEED_OPTIONS } from '../feed/book-feed.js';
import { SILENT_LOGGER } from '../logger.js';
import { purgeStaleHolds } from '../orders/credit.js';
import { BookWriter } from './book-writer.js';
import type { WriterOptions } from './book-writer.js';
import { CommitGroup } from './commit-group.js';
import type { Fence } from './ownership.js';

export interface Clock {
  now(): number;
}

export const SYSTEM_CLOCK: Clock = { now: () => Date.now() };

export interface MarketOptions extends WriterOptions {
  /** How often time is made to pass in idle books; 0: never (tests tick by hand). */
  readonly tickIntervalMs: number;
  readonly clock: Clock;
  /**
   * The ownership this process writes the books under (market/ownership.ts):
   * every write batch is fenced by it. The exchange always has one; tests of
   * a market alone may leave it out.
   */
  readonly fence?: Fence | undefined;
}

export const DEFAULT_MARKET_OPTIONS: MarketOptions = {
  provisioningTimeoutMs: 5 * 60_000,
  tickIntervalMs: 1000,
  clock: SYSTEM_CLOCK,
  logger: SILENT_LOGGER,
};

/** Credit holds left by a stopped process are looked for this often (orders/credit.ts). */
const HOLD_PURGE_INTERVAL_MS = 60_000;

export class Market {
  private timer: NodeJS.Timeout | undefined;
  private purgeTimer: NodeJS.Timeout | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private ticking = false;
  /**
   * Suspended accounts (the operators' API): an order of one is refused by
   * the book's writer itself, so one authenticated just before a suspension
   * cannot rest in a book its sweep has already passed (isSuspended).
   */
  private readonly suspended: Set<string>;
  readonly clock: Clock;
  private readonly logger: MarketOptions['logger'];

  private constructor(
    private readonly db: Database,
    private readonly writers: ReadonlyMap<string, BookWriter>,
    private readonly group: CommitGroup,
    o: MarketOptions,
    suspended: readonly string[],
  ) {
    this.suspended = new Set(suspended);
    this.clock = o.clock;
    this.logger = o.logger;
  }

  static async open(db: Database, options: Partial<MarketOptions> = {}): Promise<Market> {
    const o = { ...DEFAULT_MARKET_OPTIONS, ...options };
    const group = new CommitGroup(db, o.logger, o.fence);
    // Every book at once: their reads share the pool, and a restart waits for
    // the largest book rather than for the sum of all twelve.
    const books = GPU_TYPES.flatMap((gpuType) => ZONES.map((zone) => ({ gpuType, zone })));
    const [suspended, opened] = await Promise.all([
      db.query<{ id: string }>('SELECT id FROM accounts WHERE suspended_at IS NOT NULL'),
      Promise.all(books.map(({ gpuType, zone }) => BookWriter.open(db, group, gpuType, zone, o))),
    ]);
    const writers = new Map(opened.map((w) => [`${w.gpuType}/${w.zone}`, w]));
    const market = new Market(
      db,
      writers,
      group,
      o,
      suspended.map((r) => r.id),
    );
    market.start(o);
    return market;
  }

  /**
   * Time passes in every book; credit holds a stopped process left go
   * (orders/credit.ts), a minute after start and every minute: not before
   * the first request, a restart costs O(open orders) (book-loader.ts).
   */
  private start(o: MarketOptions): void {
    // The live feeds' heartbeats (feed/book-feed.ts), to the books with watchers.
    const heartbeatMs = (o.feed ?? DEFAULT_FEED_OPTIONS).heartbeatMs;
    if (heartbeatMs > 0) {
      this.heartbeatTimer = setInterval(() => {
        for (const w of this.writers.values()) w.feed.heartbeat();
      }, heartbeatMs);
      this.heartbeatTimer.unref();
    }
    if (o.tickIntervalMs > 0) {
      this.timer = setInterval(() => void this.tickAll(), o.tickIntervalMs);
      this.timer.unref();
      this.purgeTimer = setInterval(() => void this.purgeHolds(), HOLD_PURGE_INTERVAL_MS);
      this.purgeTimer.unref();
    }
  }

  private async purgeHolds(): Promise<void> {
    try {
      const purged = await purgeStaleHolds(this.db, this.clock.now());
      if (purged > 0)
        this.logger.warn({ purged }, 'dropped credit holds whose orders never arrived');
    } catch (err) {
      this.logger.error({ err }, 'purging stale credit holds failed; will retry');
    }
  }

  /** `listener` runs after every commit that wrote outbox events (the relay wakes). */
  onEvents(listener: () => void): void {
    this.group.onEvents = listener;
  }

  /** `listener` runs after every commit that queued accounts' events (the numberer wakes). */
  onAccountEvents(listener: () => void): void {
    this.group.onAccountEvents = listener;
  }

  /** `listener` runs after every commit that changed leases (their clusters; 'all': a book was rebuilt). */
  onLeases(listener: (clusters: readonly string[] | 'all') => void): void {
    this.group.onLeases = listener;
  }

  /** After every commit group (metrics/exchange-metrics.ts). */
  onCommit(listener: CommitGroup['onCommit']): void {
    this.group.onCommit = listener;
  }

  /** Every book's writer (metrics read their views when scraped). */
  get books(): Iterable<BookWriter> {
    return this.writers.values();
  }

  writer(gpuType: GpuType, zone: Zone): BookWriter {
    const w = this.writers.get(`${gpuType}/${zone}`);
    if (w === undefined) throw new InvariantError(`no book ${gpuType}/${zone}`);
    return w;
  }

  /**
   * An operator suspended the account: from now on the books refuse its
   * orders (isSuspended), and its open orders in every book are cancelled by
   * each book's writer, as a customer's cancel would be
   * (BookState.withdrawOrders). Every book is asked, not only those the
   * database shows orders in, so an order placed while the suspension was
   * being committed is caught too. Returns the ids cancelled.
   */
  async cancelAccountOrders(accountId: string): Promise<string[]> {
    this.suspended.add(accountId);
    const cancelled = await Promise.all(
      [...this.writers.values()].map((w) =>
        w.submit((state, changes) =>
          state.withdrawOrders(
            (o) => o.account_id === accountId,
            'account_suspended',
            this.clock.now(),
            changes,
          ),
        ),
      ),
    );
    return cancelled.flat();
  }

  /** The account was reinstated: its orders are taken again. */
  reinstated(accountId: string): void {
    this.suspended.delete(accountId);
  }

  /**
   * Whether an operator suspended the account, as this process knows it: the
   * order commands ask it inside the book's writer (orders/order-commands.ts,
   * leases/lease-commands.ts), after the authentication that let the
   * request in.
   */
  isSuspended(accountId: string): boolean {
    return this.suspended.has(accountId);
  }

  /** Let time pass in every book; resolves once every book has committed. */
  async tickAll(now: number = this.clock.now()): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      await Promise.all(
        [...this.writers.values()].map((w) =>
          w
            .submit((state, changes) => state.tick(now, changes))
            .catch((err: unknown) => {
              // The writer logged the failure and rebuilt its book; time passes at the next tick.
              this.logger.warn(
                { err, book: `${w.gpuType}/${w.zone}` },
                'a tick of the book failed',
              );
            }),
        ),
      );
    } finally {
      this.ticking = false;
    }
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    if (this.purgeTimer !== undefined) clearInterval(this.purgeTimer);
    if (this.heartbeatTimer !== undefined) clearInterval(this.heartbeatTimer);
    await Promise.all([...this.writers.values()].map((w) => w.close()));
    // What was committed has been published; the streams end here.
    for (const w of this.writers.values()) w.feed.close('unavailable');
  }
}
