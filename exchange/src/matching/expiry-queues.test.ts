import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { ExpiryQueues } from './expiry-queues.js';
import { orderRec } from './testing/given.js';
import type { OrderRec } from './order-rec.js';

function drain(q: ExpiryQueues): number[] {
  const out: number[] = [];
  for (let o = q.peek(); o !== undefined; o = q.peek()) {
    out.push(o.acceptSeq);
    q.remove(o);
  }
  return out;
}

/** Orders accepted over time (the clock never goes back), a few delays, some removed. */
const scenario = fc.array(
  fc.record({
    wait: fc.integer({ min: 0, max: 3 }),
    delay: fc.oneof(fc.constantFrom(5, 10, 24), fc.integer({ min: 1, max: 40 })),
    /** When set: an absolute expiry time instead of a delay. */
    at: fc.option(fc.constantFrom(20, 40, 60, 80), { nil: undefined }),
    drop: fc.boolean(),
  }),
  { maxLength: 300 },
);

describe('ExpiryQueues', () => {
  it('yields orders by (expiresAt, acceptance order) after any adds and removals', () => {
    fc.assert(
      fc.property(scenario, (spec) => {
        const q = new ExpiryQueues();
        let clock = 0;
        const all = spec.map((s, i) => {
          clock += s.wait;
          const o =
            s.at === undefined
              ? orderRec(i + 1, clock, clock + s.delay)
              : orderRec(i + 1, clock, s.at, true);
          return { o, drop: s.drop };
        });
        for (const { o } of all) q.push(o);
        for (const { o, drop } of all) if (drop) q.remove(o);
        const kept = all
          .filter((x) => !x.drop)
          .map((x) => x.o)
          .sort((a, b) => a.expiresAt - b.expiresAt || a.acceptSeq - b.acceptSeq);
        expect(drain(q)).toEqual(kept.map((o) => o.acceptSeq));
        expect(all.every(({ o }) => o.expQueue === null)).toBe(true);
      }),
      { seed: 44, numRuns: 300 },
    );
  });

  it('interleaves removals with adds and keeps the order', () => {
    fc.assert(
      fc.property(scenario, (spec) => {
        const q = new ExpiryQueues();
        const live = new Set<OrderRec>();
        let clock = 0;
        spec.forEach((s, i) => {
          clock += s.wait;
          const o =
            s.at === undefined
              ? orderRec(i + 1, clock, clock + s.delay)
              : orderRec(i + 1, clock, s.at, true);
          q.push(o);
          live.add(o);
          if (s.drop) {
            // remove the earliest live one, or this one
            const first = q.peek();
            const victim = i % 2 === 0 && first !== undefined ? first : o;
            q.remove(victim);
            live.delete(victim);
          }
        });
        const expected = [...live]
          .sort((a, b) => a.expiresAt - b.expiresAt || a.acceptSeq - b.acceptSeq)
          .map((o) => o.acceptSeq);
        expect(drain(q)).toEqual(expected);
      }),
      { seed: 45, numRuns: 300 },
    );
  });

  it('ignores the removal of an order it does not hold', () => {
    const q = new ExpiryQueues();
    const o = orderRec(1, 0, 5);
    q.remove(o);
    q.push(o);
    q.remove(o);
    q.remove(o);
    expect(q.peek()).toBeUndefined();
  });
});
