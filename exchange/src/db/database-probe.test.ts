// GET /readyz's database check (issue 23): one `SELECT 1` at a time, its
// answer kept a second, a query that does not come back within the timeout
// is an answer ("no answer") and is never sent again on top of itself.

import { describe, expect, it } from 'vitest';

import type { Queryable } from './database.js';
import { DatabaseProbe, OK } from './database-probe.js';

/** A database whose queries wait until the test answers them. */
function controlled(): {
  db: Queryable;
  sent: () => number;
  answer: (err?: Error & { code?: string }) => void;
} {
  const pending: { resolve: () => void; reject: (e: Error) => void }[] = [];
  let sent = 0;
  return {
    db: {
      query: <Row>() =>
        new Promise<Row[]>((resolve, reject) => {
          sent++;
          pending.push({ resolve: () => resolve([]), reject });
        }),
      exec: () => Promise.resolve(),
    },
    sent: () => sent,
    answer: (err) => {
      const p = pending.shift();
      if (err === undefined) p?.resolve();
      else p?.reject(err);
    },
  };
}

describe('DatabaseProbe', () => {
  it('probes coming together share one query, and its answer is kept for the cache time', async () => {
    let now = 0;
    const d = controlled();
    const probe = new DatabaseProbe(d.db, { now: () => now, cacheMs: 1_000, timeoutMs: 60_000 });
    const a = probe.check();
    const b = probe.check();
    d.answer();
    expect(await Promise.all([a, b])).toEqual([OK, OK]);
    now = 999;
    expect(await probe.check()).toBe(OK);
    expect(d.sent()).toBe(1);
    now = 1_000;
    const c = probe.check();
    d.answer();
    expect(await c).toBe(OK);
    expect(d.sent()).toBe(2);
  });

  it('a failed query is not ready, naming the error code only (the answer is public)', async () => {
    const d = controlled();
    const probe = new DatabaseProbe(d.db, { timeoutMs: 60_000 });
    const a = probe.check();
    d.answer(
      Object.assign(new Error('connect ECONNREFUSED 10.1.2.3:5432'), { code: 'ECONNREFUSED' }),
    );
    expect(await a).toBe('the query failed (ECONNREFUSED)');
  });

  it('a query not answered within the timeout is not ready, and no second query piles on it', async () => {
    let now = 0;
    const d = controlled();
    const probe = new DatabaseProbe(d.db, { now: () => now, cacheMs: 1_000, timeoutMs: 5 });
    expect(await probe.check()).toBe('no answer within 5 ms');
    now = 5_000;
    expect(await probe.check()).toBe('no answer to a query sent over 5 ms ago');
    expect(d.sent()).toBe(1);
    // It comes back at last: the next probe asks again.
    d.answer();
    await new Promise((r) => setImmediate(r));
    now = 10_000;
    const next = probe.check();
    d.answer();
    expect(await next).toBe(OK);
    expect(d.sent()).toBe(2);
  });
});
