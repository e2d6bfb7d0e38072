// The sleep of a loop that a commit can cut short (the outbox relay, the
// numberer of accounts' events): a wake() during the sleep ends it, and a
// wake() between two sleeps makes the next one return at once.

export class Waker {
  private woken = false;
  private wakeUp: (() => void) | undefined;

  /** Something was committed: the sleep in progress, or the next, ends now. */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** Up to `ms`, less if woken. */
  sleep(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = () => {
        this.wakeUp = undefined;
        this.woken = false;
        done();
      };
    });
  }
}

/** How a loop of rounds waits (runRounds). */
export interface RoundTiming {
  /** How often to look when nobody wakes the loop. */
  readonly idleMs?: number;
  /** A wake-up within this long of the last round waits for the rest (one round, many commits). */
  readonly coalesceMs?: number;
  /** The first retry after a failed round; doubles up to maxBackoffMs. */
  readonly backoffMs?: number;
  readonly maxBackoffMs?: number;
}

/**
 * Runs `round` (true: there may be more at once) until `stopped()`: after a
 * round that found all, sleeps till woken or idleMs; after a failure
 * (`failed` is told, with the wait), backs off.
 */
export async function runRounds(
  waker: Waker,
  t: RoundTiming,
  round: () => Promise<boolean>,
  failed: (err: unknown, retryInMs: number) => void,
  stopped: () => boolean,
  defaultCoalesceMs: number,
): Promise<void> {
  let backoff = t.backoffMs ?? 100;
  while (!stopped()) {
    let more = false;
    try {
      more = await round();
      backoff = t.backoffMs ?? 100;
    } catch (err) {
      failed(err, backoff);
      await waker.sleep(backoff);
      backoff = Math.min(backoff * 2, t.maxBackoffMs ?? 5_000);
      continue;
    }
    if (!more) {
      const roundAt = Date.now();
      await waker.sleep(t.idleMs ?? 250);
      const early = roundAt + (t.coalesceMs ?? defaultCoalesceMs) - Date.now();
      if (early > 0 && !stopped()) await new Promise((r) => setTimeout(r, early));
    }
  }
}
