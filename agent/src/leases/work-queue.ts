// A keyed work queue in the manner of controller-runtime's (client-go's
// util/workqueue), for the agent's work on leases (key: the lease id):
//
// • Deduplicated: work added for a key that already has work waiting is
//   merged into it (`merge`), never dropped; whoever added it is answered
//   when the merged work is done.
// • One worker per key: a key being worked on is not started again; work
//   added meanwhile runs once more after it (the run under way may have
//   read its state before that work's cause).
// • One rate-limited retry policy: a run that throws is run again after
//   max(per-key exponential backoff, the shared token bucket, what the error
//   asks for) — RETRY_POLICY. Work marked urgent (a revocation, D26) does
//   not wait out a backoff that is under way.
// • Requeue after: a finished run may ask for its key to run again at a
//   time of its own (`again`: a lease token due for refresh, D28).
// • Drain: no new work; work under way gets until a deadline, then its
//   signal is aborted; whoever waits for unfinished work is told
//   (QueueStoppedError), so that work is left for the next start.
//
// Waiting: `add` resolves once a run that included the work has finished
// (an event is acked only then, D29); `attempt` resolves after the first
// run that included it, done or failed (reconciliation counts failures and
// moves on; the queue retries).

/** One retry policy for all the agent's work on leases. */
export interface RetryPolicy {
  /** A key's first retry waits this long; each further failure in a row doubles it. */
  readonly baseMs: number;
  readonly maxMs: number;
  /** All keys together: at most this many retries per second, after a burst. */
  readonly perSecond: number;
  readonly burst: number;
}

/** 1 s, 2 s, 4 s … at most 30 s per lease; at most 10 retries a second in all (burst 100). */
export const RETRY_POLICY: RetryPolicy = {
  baseMs: 1_000,
  maxMs: 30_000,
  perSecond: 10,
  burst: 100,
};

/** The backoff after `failures` failures in a row (1: the first retry). */
export function backoffMs(failures: number, policy: RetryPolicy = RETRY_POLICY): number {
  const doublings = Math.min(Math.max(0, failures - 1), 30);
  return Math.min(policy.maxMs, policy.baseMs * 2 ** doublings);
}

/** The queue is draining or stopped: the work was not done and is left for the next start. */
export class QueueStoppedError extends Error {
  override readonly name = 'QueueStoppedError';
}

export type Attempt<R> =
  | { readonly ok: true; readonly value: R }
  | {
      readonly ok: false;
      readonly error: unknown;
      /** The key waits out a backoff now; its work runs again at the latest then. */
      readonly retryAtMs?: number | undefined;
    };

export interface WorkQueueOptions<W, R> {
  /** Does the work of one key; throwing means: try again later. */
  run(key: string, work: W, signal: AbortSignal): Promise<R>;
  /** Work added to a key that has work waiting: what to do instead of both. */
  merge(waiting: W, added: W): W;
  /** Work that does not wait out a backoff (a revocation, D26). */
  urgent?(work: W): boolean;
  /** After a run finished: run the key again at `atMs` with `work` (undefined: not). */
  again?(key: string, work: W, result: R): { readonly atMs: number; readonly work: W } | undefined;
  /** What a failure asks for at least before a retry (an exchange's retry-after). */
  retryAfterMs?(err: unknown): number | undefined;
  /** A run failed and runs again in `retryInMs`; `failures` in a row. */
  onRetry?(key: string, err: unknown, retryInMs: number, failures: number): void;
  /** Keys worked on at once, at most. */
  readonly maxConcurrent?: number;
  readonly retry?: RetryPolicy;
  readonly now?: () => number;
}

interface Waiter<R> {
  /** add(): settles once the work is done, or the queue stopped before. */
  readonly done?: { resolve(value: R): void; reject(err: unknown): void };
  /** attempt(): settles after the first run that included the work. */
  readonly tried?: (a: Attempt<R>) => void;
}

interface Entry<W, R> {
  /** Work waiting (not started); undefined: none. */
  work: W | undefined;
  waiters: Waiter<R>[];
  running: { readonly waiters: Waiter<R>[]; readonly abort: AbortController } | undefined;
  /** Urgent work was added while the key was being worked on. */
  urgentAdded: boolean;
  failures: number;
  lastError: unknown;
  backoff: { readonly timer: NodeJS.Timeout; readonly atMs: number } | undefined;
  later: { readonly timer: NodeJS.Timeout; readonly atMs: number; work: W } | undefined;
}

export class WorkQueue<W, R> {
  private readonly entries = new Map<string, Entry<W, R>>();
  /** Keys ready to run, in order. */
  private readonly ready: string[] = [];
  private readonly readySet = new Set<string>();
  private runningCount = 0;
  private stopping = false;
  private tokens: number;
  private tokensAtMs: number;
  private readonly policy: RetryPolicy;
  private readonly now: () => number;
  private readonly maxConcurrent: number;

  constructor(private readonly o: WorkQueueOptions<W, R>) {
    this.policy = o.retry ?? RETRY_POLICY;
    this.now = o.now ?? Date.now;
    this.maxConcurrent = Math.max(1, o.maxConcurrent ?? 16);
    this.tokens = this.policy.burst;
    this.tokensAtMs = this.now();
  }

  /** Adds work; resolves with the result of the run that did it. Rejects only when stopping. */
  add(key: string, work: W): Promise<R> {
    return new Promise((resolve, reject) => {
      if (this.stopping) {
        reject(new QueueStoppedError('the agent is stopping'));
        return;
      }
      this.put(key, work, { done: { resolve, reject } });
    });
  }

  /**
   * Adds work; resolves after the first run that included it, done or not.
   * A key waiting out a backoff answers at once (its retry is scheduled).
   */
  attempt(key: string, work: W): Promise<Attempt<R>> {
    return new Promise((resolve) => {
      if (this.stopping) {
        resolve({ ok: false, error: new QueueStoppedError('the agent is stopping') });
        return;
      }
      const e = this.entries.get(key);
      if (e?.backoff !== undefined && !(this.o.urgent?.(work) ?? false)) {
        e.work = e.work === undefined ? work : this.o.merge(e.work, work);
        resolve({ ok: false, error: e.lastError, retryAtMs: e.backoff.atMs });
        return;
      }
      this.put(key, work, { tried: resolve });
    });
  }

  /** Runs `work` for the key at `atMs`, unless work of it is due sooner already. */
  addAt(key: string, work: W, atMs: number): void {
    if (this.stopping) return;
    const e = this.entry(key);
    if (e.later !== undefined) {
      if (e.later.atMs <= atMs) {
        e.later.work = this.o.merge(e.later.work, work);
        return;
      }
      clearTimeout(e.later.timer);
    }
    const timer = setTimeout(
      () => {
        const due = e.later;
        e.later = undefined;
        if (due !== undefined && !this.stopping) this.put(key, due.work, {});
      },
      Math.min(Math.max(0, atMs - this.now()), 2 ** 31 - 1),
    );
    timer.unref();
    e.later = { timer, atMs, work };
  }

  /** Forgets the key's scheduled work (addAt): its lease is gone. */
  cancelLater(key: string): void {
    const e = this.entries.get(key);
    if (e?.later === undefined) return;
    clearTimeout(e.later.timer);
    e.later = undefined;
    this.cleanUp(key, e);
  }

  /** Keys with work waiting, running, or waiting out a backoff. */
  get size(): { readonly queued: number; readonly running: number; readonly retrying: number } {
    let queued = 0;
    let retrying = 0;
    for (const e of this.entries.values()) {
      if (e.backoff !== undefined) retrying++;
      else if (e.work !== undefined && e.running === undefined) queued++;
    }
    return { queued, running: this.runningCount, retrying };
  }

  /**
   * No new work from now on; what waits is not started (its waiters are
   * told); work under way gets until `deadlineMs` from now, then its signal
   * is aborted and its waiters are told. Resolves once nothing runs or the
   * deadline has passed, with the keys left unfinished.
   */
  async drain(deadlineMs: number): Promise<{ readonly unfinished: number }> {
    this.stopping = true;
    const stopped = new QueueStoppedError('the agent is stopping');
    this.ready.length = 0;
    this.readySet.clear();
    let unfinished = 0;
    for (const [key, e] of this.entries) {
      if (e.backoff !== undefined) clearTimeout(e.backoff.timer);
      if (e.later !== undefined) clearTimeout(e.later.timer);
      e.backoff = undefined;
      e.later = undefined;
      if (e.work !== undefined) unfinished++;
      e.work = undefined;
      settleStopped(e.waiters.splice(0), stopped);
      this.cleanUp(key, e);
    }
    const running = [...this.entries.values()].flatMap((e) =>
      e.running === undefined ? [] : [e.running],
    );
    if (running.length === 0) return { unfinished };
    const finished = new Promise<void>((resolve) => {
      this.onIdle = resolve;
      if (this.runningCount === 0) resolve();
    });
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), Math.max(0, deadlineMs));
    });
    const outcome = await Promise.race([finished.then(() => 'done' as const), deadline]);
    clearTimeout(timer);
    if (outcome === 'done') return { unfinished };
    const late = new QueueStoppedError('the drain deadline passed');
    for (const r of running) {
      r.abort.abort(late);
      settleStopped(r.waiters, late);
    }
    return { unfinished: unfinished + this.runningCount };
  }

  private onIdle: (() => void) | undefined;

  private entry(key: string): Entry<W, R> {
    let e = this.entries.get(key);
    if (e === undefined) {
      e = {
        work: undefined,
        waiters: [],
        running: undefined,
        urgentAdded: false,
        failures: 0,
        lastError: undefined,
        backoff: undefined,
        later: undefined,
      };
      this.entries.set(key, e);
    }
    return e;
  }

  private put(key: string, work: W, waiter: Waiter<R>): void {
    const e = this.entry(key);
    e.work = e.work === undefined ? work : this.o.merge(e.work, work);
    if (waiter.done !== undefined || waiter.tried !== undefined) e.waiters.push(waiter);
    if (this.o.urgent?.(work) === true) {
      if (e.running !== undefined) e.urgentAdded = true;
      if (e.backoff !== undefined) {
        clearTimeout(e.backoff.timer);
        e.backoff = undefined;
      }
    }
    this.makeReady(key, e);
    this.pump();
  }

  private makeReady(key: string, e: Entry<W, R>): void {
    if (e.running !== undefined || e.backoff !== undefined || e.work === undefined) return;
    if (this.readySet.has(key)) return;
    this.readySet.add(key);
    this.ready.push(key);
  }

  private pump(): void {
    while (this.runningCount < this.maxConcurrent && !this.stopping) {
      const key = this.ready.shift();
      if (key === undefined) return;
      this.readySet.delete(key);
      const e = this.entries.get(key);
      if (e === undefined || e.running !== undefined || e.work === undefined) continue;
      this.start(key, e, e.work);
    }
  }

  private start(key: string, e: Entry<W, R>, work: W): void {
    const waiters = e.waiters.splice(0);
    e.work = undefined;
    e.urgentAdded = false;
    const abort = new AbortController();
    const running = { waiters, abort };
    e.running = running;
    this.runningCount++;
    // A run that throws at once fails like one that rejects.
    Promise.resolve()
      .then(() => this.o.run(key, work, abort.signal))
      .then(
        (value) => this.succeeded(key, e, work, value, waiters),
        (err: unknown) => this.failed(key, e, work, err, waiters),
      )
      .finally(() => {
        e.running = undefined;
        this.runningCount--;
        if (this.stopping) {
          if (this.runningCount === 0) this.onIdle?.();
        } else this.makeReady(key, e);
        this.cleanUp(key, e);
        this.pump();
      });
  }

  private succeeded(key: string, e: Entry<W, R>, work: W, value: R, waiters: Waiter<R>[]): void {
    e.failures = 0;
    e.lastError = undefined;
    for (const w of waiters) {
      w.done?.resolve(value);
      w.tried?.({ ok: true, value });
    }
    const next = this.stopping ? undefined : this.o.again?.(key, work, value);
    if (next !== undefined) this.addAt(key, next.work, next.atMs);
  }

  private failed(key: string, e: Entry<W, R>, work: W, err: unknown, waiters: Waiter<R>[]): void {
    e.lastError = err;
    for (const w of waiters) w.tried?.({ ok: false, error: err });
    const still = waiters.filter((w) => w.done !== undefined);
    if (this.stopping) {
      settleStopped(still, new QueueStoppedError('the agent is stopping', { cause: err }));
      return;
    }
    // Tried again: the failed work first, then what came meanwhile.
    e.work = e.work === undefined ? work : this.o.merge(work, e.work);
    e.waiters = [...still, ...e.waiters];
    e.failures++;
    const waitMs = e.urgentAdded
      ? 0
      : Math.max(
          backoffMs(e.failures, this.policy),
          this.bucketWaitMs(),
          this.o.retryAfterMs?.(err) ?? 0,
        );
    this.o.onRetry?.(key, err, waitMs, e.failures);
    if (waitMs === 0) return;
    const timer = setTimeout(() => {
      e.backoff = undefined;
      this.makeReady(key, e);
      this.pump();
    }, waitMs);
    timer.unref();
    e.backoff = { timer, atMs: this.now() + waitMs };
    // Attempts added meanwhile are answered as attempts added now would be.
    for (const w of e.waiters) w.tried?.({ ok: false, error: err, retryAtMs: e.backoff.atMs });
    e.waiters = e.waiters.filter((w) => w.done !== undefined);
  }

  /** The shared bucket: a token per retry, `perSecond` of them a second, `burst` at most. */
  private bucketWaitMs(): number {
    const now = this.now();
    const refill = ((now - this.tokensAtMs) * this.policy.perSecond) / 1000;
    this.tokens = Math.min(this.policy.burst, this.tokens + refill);
    this.tokensAtMs = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / this.policy.perSecond);
  }

  private cleanUp(key: string, e: Entry<W, R>): void {
    if (
      e.work === undefined &&
      e.running === undefined &&
      e.backoff === undefined &&
      e.later === undefined &&
      e.waiters.length === 0
    ) {
      this.entries.delete(key);
    }
  }
}

/** Tells waiters their work was not done. */
function settleStopped<R>(waiters: readonly Waiter<R>[], err: QueueStoppedError): void {
  for (const w of waiters) {
    w.done?.reject(err);
    w.tried?.({ ok: false, error: err });
  }
}
