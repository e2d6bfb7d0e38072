// The life of a process beside the others on its database
// (docs/ownership.md): stand by while another owns the market, take the
// books when their lease lapses, start what only the owner runs, renew the
// lease, and step down when the books are lost (a renewal finds another
// owner, or a write batch is fenced). The process then stands by again.
//
// What it serves is decided by `serving()`: true only while the lease this
// process last renewed has not run out by its own clock. The database's
// lease and the fence are what keep two writers apart; this keeps a process
// that was paused (SIGSTOP, a stall) from answering anything before it has
// learnt whether it still owns the market.

import type { Logger } from '../logger.js';
import { OwnershipLost } from './ownership.js';
import type { Holder, MarketOwnership } from './ownership.js';

export interface StewardHooks<T> {
  /** The books are this process's now: start what only the owner runs. */
  start(epochs: ReadonlyMap<string, number>): Promise<T>;
  /** They are not any more, or the process closes: stop all of it. */
  stop(owned: T, why: 'lost' | 'closing'): Promise<void>;
}

export interface StewardOptions {
  readonly logger: Logger;
  /** How often the owner renews its lease (a third of the lease, say). */
  readonly renewEveryMs: number;
  /** How often a standby looks whether the lease lapsed. */
  readonly pollEveryMs: number;
  /** Once per spell of standing by, with the holder it waits for. */
  readonly onStandby?: (holder: Holder) => void;
  /**
   * After anything that changes what `serving()` says or until when (a
   * start, a renewal, a loss): for what reads it from another thread
   * (providers/agent-host.ts).
   */
  readonly onChange?: () => void;
  /** How long close() waits for the market to stop (default 15 s). */
  readonly closeTimeoutMs?: number;
  /** Monotonic milliseconds (performance.now); tests may pass their own. */
  readonly now?: () => number;
}

/** The owner stops serving this long before its lease ends by its own clock. */
const SAFETY_SHARE = 1 / 6;

export class Steward<T> {
  private closing = false;
  /** From an acquisition until the owned part stopped: the lease is renewed. */
  private holding = false;
  private lostFlag = false;
  private owned: T | undefined;
  /** Monotonic time until which this process may serve as the owner. */
  private validUntil = -Infinity;
  private wakeUp: (() => void) | undefined;
  private readonly now: () => number;
  private loopDone: Promise<void> | undefined;
  private firstSettled = false;
  private resolveFirst: (owned: T) => void = () => undefined;
  private rejectFirst: (err: unknown) => void = () => undefined;

  /** Resolves the first time this process owns the market and has started. */
  readonly first: Promise<T>;

  constructor(
    private readonly ownership: Pick<
      MarketOwnership,
      'tryAcquire' | 'renew' | 'release' | 'forget' | 'leaseMs'
    >,
    private readonly hooks: StewardHooks<T>,
    private readonly o: StewardOptions,
  ) {
    this.now = o.now ?? (() => performance.now());
    this.first = new Promise<T>((resolve, reject) => {
      this.resolveFirst = resolve;
      this.rejectFirst = reject;
    });
    // A start that is closed before it owns anything rejects `first`; nobody
    // has to listen for that.
    this.first.catch(() => undefined);
  }

  /** Raised each time this process takes the market (a start, a takeover). */
  generation = 0;

  /** Until when (monotonic ms, `now()`'s clock) this process serves; -Infinity: it does not. */
  get servingUntil(): number {
    return this.owned !== undefined && !this.lostFlag ? this.validUntil : -Infinity;
  }

  /** Owner, started, and its lease still runs by this process's clock. */
  serving(): boolean {
    return this.owned !== undefined && !this.lostFlag && this.now() < this.validUntil;
  }

  /** What this process owns right now, if it serves. */
  current(): T | undefined {
    return this.serving() ? this.owned : undefined;
  }

  /** Begin: take the books or stand by. */
  run(): void {
    this.loopDone ??= this.loop().catch((err: unknown) => {
      this.o.logger.error({ err }, 'the ownership loop failed');
      this.settleFirst(err);
    });
  }

  /** A write batch was fenced: another process owns the books. */
  lose(): void {
    if (!this.holding) return;
    this.lostFlag = true;
    this.o.onChange?.();
    this.wake();
  }

  /** Stop: stop what the owner runs, then give the books up for a standby to take at once. */
  async close(): Promise<void> {
    this.closing = true;
    this.wake();
    // A start that hangs (a NATS server that never answers) must not keep
    // the process from stopping: the lease then lapses for a standby.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), this.o.closeTimeoutMs ?? 15_000);
    });
    const done = await Promise.race([this.loopDone, late]);
    clearTimeout(timer);
    if (done === 'late') this.o.logger.warn('the market did not stop in time; leaving it to lapse');
    this.settleFirst(new Error('the exchange closed before it owned the market'));
  }

  private resolveFirstWith(owned: T): void {
    if (this.firstSettled) return;
    this.firstSettled = true;
    this.resolveFirst(owned);
  }

  private settleFirst(err: unknown): void {
    if (this.firstSettled) return;
    this.firstSettled = true;
    this.rejectFirst(err);
  }

  private wake(): void {
    this.wakeUp?.();
  }

  /** Sleep `ms`, or until woken (a loss, a close). */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = done;
    });
  }

  private async loop(): Promise<void> {
    let atStart = true;
    while (!this.closing) {
      const epochs = await this.waitForBooks(atStart);
      atStart = false;
      if (epochs === undefined) return;
      if (this.closing) {
        // Closed while the acquisition was under way: give the books back at once.
        await this.ownership.release().catch((err: unknown) => {
          this.o.logger.warn({ err }, 'releasing the market at close failed');
        });
        return;
      }
      // Renewing from now on, also while the owned part starts (a slow
      // first connection to NATS must not let the lease lapse under it).
      this.holding = true;
      let lostWhileStarting = false;
      const held = this.holdWhileOwner().then((why) => {
        if (why === 'lost') lostWhileStarting = true;
        return why;
      });
      let owned: T;
      try {
        owned = await this.hooks.start(epochs);
      } catch (err) {
        this.holding = false;
        this.wake();
        await held;
        this.lostFlag = false;
        // Nothing half-started keeps the books: a standby may do better.
        await this.ownership.release().catch((releaseErr: unknown) => {
          this.o.logger.warn(
            { err: releaseErr },
            'releasing the market after a failed start failed',
          );
        });
        if (!this.firstSettled) {
          this.settleFirst(err);
          return;
        }
        this.o.logger.error({ err }, 'starting the market after a takeover failed; standing by');
        await this.sleep(this.o.pollEveryMs * 4);
        continue;
      }
      // Lost while it started: it never serves, it stands by again.
      if (!lostWhileStarting) {
        this.owned = owned;
        this.o.onChange?.();
        this.resolveFirstWith(owned);
      }
      const why = await held;
      this.holding = false;
      this.owned = undefined;
      this.lostFlag = false;
      this.validUntil = -Infinity;
      this.o.onChange?.();
      if (why === 'lost') {
        this.o.logger.warn('this process lost the market to another exchange process; standing by');
        await this.hooks.stop(owned, 'lost').catch((err: unknown) => {
          this.o.logger.error({ err }, 'stopping the market after losing it failed');
        });
        continue;
      }
      await this.hooks.stop(owned, 'closing');
      await this.ownership.release();
      this.o.logger.info('released the market: a standby may take it over now');
      return;
    }
  }

  /** Poll until every book is this process's; undefined once closing. */
  private async waitForBooks(atStart: boolean): Promise<ReadonlyMap<string, number> | undefined> {
    let announced = false;
    while (!this.closing) {
      const sent = this.now();
      try {
        const r = await this.ownership.tryAcquire(atStart);
        if (r.acquired) {
          this.generation++;
          this.validUntil = sent + this.ownership.leaseMs * (1 - SAFETY_SHARE);
          if (announced)
            this.o.logger.info({ epochs: Object.fromEntries(r.epochs) }, 'took over the market');
          return r.epochs;
        }
        if (!announced) {
          announced = true;
          // One line: the caller's (a banner), else a log record.
          if (this.o.onStandby !== undefined) this.o.onStandby(r.holder);
          else
            this.o.logger.info(
              { holder: r.holder },
              'standing by: another exchange process owns the market',
            );
        }
      } catch (err) {
        this.o.logger.warn({ err }, 'looking at who owns the market failed; trying again');
      }
      atStart = false;
      await this.sleep(this.o.pollEveryMs);
    }
    return undefined;
  }

  /** Renew until the books are lost, the process closes, or a failed start stops it. */
  private async holdWhileOwner(): Promise<'lost' | 'closing'> {
    for (;;) {
      if (this.closing || !this.holding) return 'closing';
      if (this.lostFlag) {
        this.ownership.forget();
        return 'lost';
      }
      await this.sleep(this.o.renewEveryMs);
      if (this.closing || !this.holding) return 'closing';
      if (this.lostFlag) continue;
      const sent = this.now();
      try {
        await this.ownership.renew();
        this.validUntil = sent + this.ownership.leaseMs * (1 - SAFETY_SHARE);
        this.o.onChange?.();
      } catch (err) {
        if (err instanceof OwnershipLost) return 'lost';
        // The database did not answer: serve while the lease lasts, then
        // stop serving until a renewal gets through (or finds another owner).
        this.o.logger.warn({ err }, 'renewing the market lease failed; trying again');
      }
    }
  }
}
