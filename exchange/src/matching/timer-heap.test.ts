import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { DONE, RESTING } from './order-rec.js';
import type { OrderRec } from './order-rec.js';
import { orderRec } from './testing/given.js';
import { TimerHeap } from './timer-heap.js';

type Entry = { time: number; o: OrderRec };

function drain(h: TimerHeap): Entry[] {
  const out: Entry[] = [];
  while (h.size > 0) {
    out.push({ time: h.peekTime(), o: h.firstOrder() });
    h.pop();
  }
  return out;
}

/** docs/matching.md, Time: arrivals at the same time in acceptance order. */
function byDueOrder(a: Entry, b: Entry): number {
  return a.time - b.time || a.o.acceptSeq - b.o.acceptSeq;
}

const entries = fc.array(
  fc.record({
    time: fc.integer({ min: 0, max: 20 }),
    done: fc.boolean(),
  }),
  { maxLength: 200 },
);

describe('TimerHeap', () => {
  it('pops in (time, acceptance order)', () => {
    fc.assert(
      fc.property(entries, (es) => {
        const h = new TimerHeap();
        const all = es.map((e, i) => ({ time: e.time, o: orderRec(i + 1) }));
        for (const e of all) h.push(e.time, e.o);
        expect(drain(h)).toEqual([...all].sort(byDueOrder));
      }),
      { seed: 42, numRuns: 200 },
    );
  });

  it('dropDone removes exactly the done orders and keeps the heap order', () => {
    fc.assert(
      fc.property(entries, (es) => {
        const h = new TimerHeap();
        const all = es.map((e, i) => {
          const o = orderRec(i + 1);
          o.state = e.done ? DONE : RESTING;
          return { time: e.time, o };
        });
        for (const e of all) h.push(e.time, e.o);
        h.dropDone((o) => o.state === DONE);
        const live = all.filter((e) => e.o.state !== DONE).sort(byDueOrder);
        expect(drain(h)).toEqual(live);
      }),
      { seed: 43, numRuns: 200 },
    );
  });

  it('reports Infinity when empty and ignores a pop of nothing', () => {
    const h = new TimerHeap();
    h.pop();
    expect(h.peekTime()).toBe(Infinity);
    expect(h.size).toBe(0);
  });
});
