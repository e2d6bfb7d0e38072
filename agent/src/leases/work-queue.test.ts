import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { QueueStoppedError, RETRY_POLICY, WorkQueue, backoffMs } from './work-queue.js';
import type { WorkQueueOptions } from './work-queue.js';

/** Work is a list of labels; merging concatenates. Runs are scripted per call. */
type Work = readonly string[];

interface Run {
  readonly key: string;
  readonly work: Work;
  readonly atMs: number;
  finish(value?: string): void;
  fail(err: Error): void;
  readonly signal: AbortSignal;
}

function queue(options: Partial<WorkQueueOptions<Work, string>> = {}) {
  const runs: Run[] = [];
  let running = 0;
  let maxRunningPerKey = 0;
  const perKey = new Map<string, number>();
  const q = new WorkQueue<Work, string>({
    run: (key, work, signal) =>
      new Promise<string>((resolve, reject) => {
        running++;
        perKey.set(key, (perKey.get(key) ?? 0) + 1);
        maxRunningPerKey = Math.max(maxRunningPerKey, perKey.get(key) ?? 0);
        const done = () => {
          running--;
          perKey.set(key, (perKey.get(key) ?? 1) - 1);
        };
        runs.push({
          key,
          work,
          atMs: Date.now(),
          signal,
          finish: (value = `done ${work.join('+')}`) => {
            done();
            resolve(value);
          },
          fail: (err) => {
            done();
            reject(err);
          },
        });
      }),
    merge: (a, b) => [...a, ...b],
    ...options,
  });
  return { q, runs, running: () => running, maxRunningPerKey: () => maxRunningPerKey };
}

/** Lets promise callbacks run (fake timers do not move). */
const settle = () => vi.advanceTimersByTimeAsync(0);

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('the per-lease work queue (controller-runtime style)', () => {
  it('deduplicates: work added for a key that waits merges into it; both are answered when it is done', async () => {
    const { q, runs } = queue({ maxConcurrent: 1 });
    const other = q.add('lse_b', ['b']);
    const first = q.add('lse_a', ['provision']);
    const dup = q.add('lse_a', ['provision again']);
    await settle();
    expect(runs.map((r) => r.key)).toEqual(['lse_b']);
    runs[0]?.finish();
    await settle();
    expect(runs.map((r) => [r.key, r.work])).toEqual([
      ['lse_b', ['b']],
      ['lse_a', ['provision', 'provision again']],
    ]);
    let answered = 0;
    void first.then(() => answered++);
    void dup.then(() => answered++);
    await settle();
    // Not answered because a duplicate was dropped: only once the merged work is done.
    expect(answered).toBe(0);
    runs[1]?.finish('ok');
    expect(await first).toBe('ok');
    expect(await dup).toBe('ok');
    expect(await other).toBe('done b');
  });

  it('one worker per key: work added during a run runs once more after it; other keys run meanwhile', async () => {
    const { q, runs, maxRunningPerKey, running } = queue();
    const a1 = q.add('lse_a', ['1']);
    await settle();
    const a2 = q.add('lse_a', ['2']);
    const a3 = q.add('lse_a', ['3']);
    const b = q.add('lse_b', ['b']);
    await settle();
    expect(running()).toBe(2);
    expect(runs.map((r) => [r.key, r.work])).toEqual([
      ['lse_a', ['1']],
      ['lse_b', ['b']],
    ]);
    runs[0]?.finish();
    await settle();
    expect(runs.map((r) => r.work)).toEqual([['1'], ['b'], ['2', '3']]);
    runs[2]?.finish();
    runs[1]?.finish();
    expect(await a1).toBe('done 1');
    expect(await a2).toBe('done 2+3');
    expect(await a3).toBe('done 2+3');
    await b;
    expect(maxRunningPerKey()).toBe(1);
    expect(q.size).toEqual({ queued: 0, running: 0, retrying: 0 });
  });

  it('a failed run is retried with exponential backoff; whoever added it is answered after it is done', async () => {
    const retries: number[] = [];
    const { q, runs } = queue({ onRetry: (_k, _e, ms) => retries.push(ms) });
    let done = false;
    const added = q.add('lse_a', ['provision']).then((v) => {
      done = true;
      return v;
    });
    await settle();
    const start = Date.now();
    for (let i = 0; i < 3; i++) {
      runs[i]?.fail(new Error('exchange down'));
      await settle();
      expect(q.size.retrying).toBe(1);
      await vi.advanceTimersByTimeAsync(backoffMs(i + 1) - 1);
      expect(runs).toHaveLength(i + 1);
      await vi.advanceTimersByTimeAsync(1);
      expect(runs).toHaveLength(i + 2);
    }
    expect(retries).toEqual([1_000, 2_000, 4_000]);
    expect(runs.map((r) => r.atMs - start)).toEqual([0, 1_000, 3_000, 7_000]);
    expect(done).toBe(false);
    runs[3]?.finish();
    expect(await added).toBe('done provision');
    // A success resets the backoff.
    const again = q.add('lse_a', ['x']);
    await settle();
    runs[4]?.fail(new Error('down'));
    await settle();
    expect(retries.at(-1)).toBe(1_000);
    await vi.advanceTimersByTimeAsync(1_000);
    runs[5]?.finish();
    await again;
  });

  it('the backoff doubles up to its cap', () => {
    expect([1, 2, 3, 5, 6, 50].map((n) => backoffMs(n))).toEqual([
      1_000,
      2_000,
      4_000,
      16_000,
      30_000,
      RETRY_POLICY.maxMs,
    ]);
  });

  it('attempt() answers after the first try; during a backoff at once, with when it runs again', async () => {
    const { q, runs } = queue();
    const tried = q.attempt('lse_a', ['report']);
    await settle();
    const err = new Error('down');
    runs[0]?.fail(err);
    expect(await tried).toEqual({ ok: false, error: err });
    const during = await q.attempt('lse_a', ['report again']);
    expect(during).toEqual({ ok: false, error: err, retryAtMs: Date.now() + 1_000 });
    await vi.advanceTimersByTimeAsync(1_000);
    // The retry carries what was asked meanwhile.
    expect(runs[1]?.work).toEqual(['report', 'report again']);
    const next = q.attempt('lse_a', ['mark']);
    runs[1]?.finish();
    await settle();
    runs[2]?.finish('marked');
    expect(await next).toEqual({ ok: true, value: 'marked' });
  });

  it('urgent work (a revocation) does not wait out a backoff under way', async () => {
    const { q, runs } = queue({ urgent: (w) => w.includes('revoke') });
    void q.add('lse_a', ['provision']);
    await settle();
    runs[0]?.fail(new Error('down'));
    await settle();
    expect(q.size.retrying).toBe(1);
    const revoked = q.add('lse_a', ['revoke']);
    await settle();
    expect(runs[1]?.work).toEqual(['provision', 'revoke']);
    runs[1]?.finish();
    await revoked;
  });

  it("a failure's retry-after and the shared bucket hold retries back longer", async () => {
    const { q, runs } = queue({
      retry: { baseMs: 100, maxMs: 100, perSecond: 1, burst: 1 },
      retryAfterMs: (err) => (err as { retryAfterMs?: number }).retryAfterMs,
    });
    void q.add('lse_a', ['a']);
    void q.add('lse_b', ['b']);
    void q.add('lse_c', ['c']);
    await settle();
    const start = Date.now();
    runs[0]?.fail(Object.assign(new Error('limited'), { retryAfterMs: 5_000 }));
    runs[1]?.fail(new Error('down'));
    runs[2]?.fail(new Error('down'));
    await settle();
    await vi.advanceTimersByTimeAsync(10_000);
    const retried = Object.fromEntries(runs.slice(3).map((r) => [r.key, r.atMs - start]));
    // lse_a as the exchange asked (taking the bucket's one token); then one retry a second.
    expect(retried).toEqual({ lse_a: 5_000, lse_b: 1_000, lse_c: 2_000 });
  });

  it('requeue after: a run may ask for its key to run again at a time of its own; the earliest wins', async () => {
    const { q, runs } = queue({
      again: (_key, work) =>
        work.includes('provision') ? { atMs: Date.now() + 60_000, work: ['refresh'] } : undefined,
    });
    void q.add('lse_a', ['provision']);
    await settle();
    runs[0]?.finish();
    await settle();
    q.addAt('lse_a', ['sooner'], Date.now() + 30_000);
    q.addAt('lse_a', ['later'], Date.now() + 90_000);
    await vi.advanceTimersByTimeAsync(29_999);
    expect(runs).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(runs[1]?.work).toEqual(['sooner', 'later']);
    runs[1]?.finish();
    await vi.advanceTimersByTimeAsync(120_000);
    expect(runs).toHaveLength(2);
    q.addAt('lse_a', ['refresh'], Date.now() + 1_000);
    q.cancelLater('lse_a');
    await vi.advanceTimersByTimeAsync(2_000);
    expect(runs).toHaveLength(2);
  });

  it('drain: nothing new, waiting work not started, work under way gets until the deadline', async () => {
    const { q, runs } = queue({ maxConcurrent: 1 });
    const quick = q.add('lse_a', ['a']);
    const slow = q.add('lse_b', ['b']);
    await settle();
    const draining = q.drain(30_000);
    await expect(slow).rejects.toBeInstanceOf(QueueStoppedError);
    await expect(q.add('lse_c', ['c'])).rejects.toBeInstanceOf(QueueStoppedError);
    expect(await q.attempt('lse_c', ['c'])).toMatchObject({ ok: false });
    await vi.advanceTimersByTimeAsync(10_000);
    runs[0]?.finish();
    expect(await quick).toBe('done a');
    expect(await draining).toEqual({ unfinished: 1 });
    expect(runs).toHaveLength(1);
  });

  it('drain: past the deadline, work under way is aborted and its waiters told', async () => {
    const { q, runs } = queue();
    const stuck = q.add('lse_a', ['provision']).catch((err: unknown) => err);
    await settle();
    const draining = q.drain(30_000);
    await vi.advanceTimersByTimeAsync(29_999);
    expect(runs[0]?.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await draining).toEqual({ unfinished: 1 });
    expect(runs[0]?.signal.aborted).toBe(true);
    expect(await stuck).toBeInstanceOf(QueueStoppedError);
    // It ends later: nothing is retried, nothing else starts.
    runs[0]?.fail(runs[0].signal.reason as Error);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(runs).toHaveLength(1);
  });
});
