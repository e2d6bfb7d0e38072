// Runs a task every interval, never two at once: the next run starts one
// interval after the previous one started (or at once if it took longer).

export class Ticker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly intervalMs: number,
    private readonly task: () => Promise<void>,
  ) {}

  /** First run now. */
  start(): void {
    this.schedule(0);
  }

  /** Runs it now, unless a run is under way (then waits for that one). */
  async runNow(): Promise<void> {
    if (this.stopped) return;
    if (this.running !== undefined) return this.running;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.fire();
  }

  /** No more runs; resolves when the one under way has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.fire(), Math.max(0, delayMs));
  }

  private async fire(): Promise<void> {
    this.timer = undefined;
    const started = Date.now();
    // The task catches its own errors; a throw here would be a bug, so it is not swallowed.
    this.running = this.task().finally(() => {
      this.running = undefined;
    });
    await this.running;
    if (this.timer === undefined) this.schedule(this.intervalMs - (Date.now() - started));
  }
}
