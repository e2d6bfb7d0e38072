// Runs a task every interval, never two at once: the next run starts one
// interval after the previous one started (or at once if it took longer).
// nudge() asks for a run sooner than the schedule, coalesced: never sooner
// than minGapMs after the previous run started, and any number of nudges
// until then make one run. A nudge during a run makes one more run after it
// (that run may have read its state before the nudge's cause).

export interface TickerOptions {
  /** Runs asked for by nudge() start at least this long after the previous start. */
  readonly minGapMs?: number;
  readonly now?: () => number;
}

export class Ticker {
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires. */
  private timerAtMs = 0;
  private running: Promise<void> | undefined;
  private lastStartMs: number | undefined;
  private nudged = false;
  private stopped = false;
  private readonly now: () => number;

  constructor(
    private readonly intervalMs: number,
    private readonly task: () => Promise<void>,
    private readonly o: TickerOptions = {},
  ) {
    this.now = o.now ?? Date.now;
  }

  /** First run now. */
  start(): void {
    this.schedule(0);
  }

  /** Runs it now, unless a run is under way (then waits for that one). */
  async runNow(): Promise<void> {
    if (this.stopped) return;
    if (this.running !== undefined) return this.running;
    this.clearTimer();
    await this.fire();
  }

  /** A run soon: at once, or minGapMs after the last start, or after the run under way. */
  nudge(): void {
    if (this.stopped) return;
    if (this.running !== undefined) {
      this.nudged = true;
      return;
    }
    this.runBy(this.earliest());
  }

  /** No more runs; resolves when the one under way has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.clearTimer();
    await this.running;
  }

  private earliest(): number {
    const now = this.now();
    return this.lastStartMs === undefined
      ? now
      : Math.max(now, this.lastStartMs + (this.o.minGapMs ?? 0));
  }

  /** Moves the next run to `atMs` unless one comes sooner already. */
  private runBy(atMs: number): void {
    if (this.timer !== undefined && this.timerAtMs <= atMs) return;
    this.clearTimer();
    this.schedule(atMs - this.now());
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    const delay = Math.max(0, delayMs);
    this.timerAtMs = this.now() + delay;
    this.timer = setTimeout(() => void this.fire(), delay);
  }

  private async fire(): Promise<void> {
    this.timer = undefined;
    const started = this.now();
    this.lastStartMs = started;
    // The task catches its own errors; a throw here would be a bug, so it is not swallowed.
    this.running = this.task().finally(() => {
      this.running = undefined;
    });
    await this.running;
    if (this.timer === undefined) this.schedule(this.intervalMs - (this.now() - started));
    if (this.nudged) {
      this.nudged = false;
      this.runBy(this.earliest());
    }
  }
}
