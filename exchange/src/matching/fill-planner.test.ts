// The FillPlanner against docs/matching.md "Choosing the fills" read literally:
// every selection of a short list of asks is enumerated; the reachable amounts
// are the sums of the selections, and the plan for x is the selection of x
// that is greatest taken ask by ask in priority order.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { FillPlanner } from './fill-planner.js';
import { OrderRec } from './order-rec.js';
import { Plan } from './plan.js';

interface Ask {
  readonly nodes: number;
  readonly whole: boolean;
}

function rec(i: number, a: Ask): OrderRec {
  const input = {
    id: `s${i}`,
    side: 'sell' as const,
    type: 'limit' as const,
    accountId: 'a',
    orgId: 'g',
    nodes: a.nodes,
    durationHours: 10,
    limitPrice: 100 + i,
    clusterId: 'c',
    allOrNothing: a.whole,
  };
  return new OrderRec(input, 0, i + 1, 0, Infinity, 100 + i, a.nodes);
}

/** Every selection (nodes taken per ask) of at most `cap` nodes in all. */
function selections(asks: readonly Ask[], cap: number): number[][] {
  let out: number[][] = [[]];
  for (const a of asks) {
    const next: number[][] = [];
    const options = a.whole ? [0, a.nodes] : Array.from({ length: a.nodes + 1 }, (_, n) => n);
    for (const s of out) {
      const sum = s.reduce((x, y) => x + y, 0);
      for (const n of options) if (sum + n <= cap) next.push([...s, n]);
    }
    out = next;
  }
  return out;
}

/** Lexicographic comparison: positive when a takes more at the first ask they differ. */
function lex(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

const askArb: fc.Arbitrary<Ask> = fc.record({
  nodes: fc.integer({ min: 1, max: 6 }),
  whole: fc.boolean(),
});

/** Larger all-or-nothing asks, so that the bitsets span several 32-bit words. */
const bigAskArb: fc.Arbitrary<Ask> = fc.oneof(
  fc.record({ nodes: fc.integer({ min: 1, max: 5 }), whole: fc.constant(false) }),
  fc.record({ nodes: fc.integer({ min: 2, max: 80 }), whole: fc.constant(true) }),
);

/** Checks best(), reachable() and planTo() for every amount against the enumeration. */
function check(asks: readonly Ask[], need: number): void {
  // the greatest selection (in priority order) of each sum
  const bySum = new Map<number, number[]>();
  for (const s of selections(asks, need)) {
    const sum = s.reduce((x, y) => x + y, 0);
    const top = bySum.get(sum);
    if (top === undefined || lex(s, top) > 0) bySum.set(sum, s);
  }
  const planner = new FillPlanner();
  planner.reset(need);
  // pushed until the planner says more cannot change anything
  for (let i = 0; i < asks.length; i++) {
    if (!planner.push(rec(i, asks[i]!), asks[i]!.nodes)) break;
  }
  planner.prepare();
  expect(planner.best()).toBe(Math.max(...bySum.keys()));
  for (let x = 0; x <= need; x++) {
    const best = bySum.get(x);
    expect(planner.reachable(x), `reachable(${x})`).toBe(best !== undefined);
    if (best === undefined) continue;
    const plan = new Plan();
    planner.planTo(x, plan);
    const got = asks.map(() => 0);
    for (let i = 0; i < plan.len; i++) got[Number(plan.order(i).id.slice(1))] = plan.nodesAt(i);
    expect(got, `plan for ${x}`).toEqual(best);
  }
}

describe('FillPlanner (docs/matching.md "Choosing the fills")', () => {
  it('reaches exactly the sums of the selections, and plans the greatest selection in priority order', () => {
    fc.assert(
      fc.property(fc.array(askArb, { maxLength: 6 }), fc.integer({ min: 1, max: 12 }), check),
      { seed: 424242, numRuns: 400 },
    );
  });

  it('the same with bitsets of several 32-bit words (all-or-nothing asks of up to 80 nodes)', () => {
    fc.assert(
      fc.property(fc.array(bigAskArb, { maxLength: 6 }), fc.integer({ min: 1, max: 200 }), check),
      { seed: 424242, numRuns: 200 },
    );
  });

  it('handles needs across 32-bit word boundaries (bitsets of several words)', () => {
    // AON 33 and 64, divisible 2: 0…2, 33…35, 64…66, 97…99
    const planner = new FillPlanner();
    planner.reset(100);
    const asks: Ask[] = [
      { nodes: 33, whole: true },
      { nodes: 2, whole: false },
      { nodes: 64, whole: true },
    ];
    asks.forEach((a, i) => planner.push(rec(i, a), a.nodes));
    planner.prepare();
    expect(planner.best()).toBe(99);
    expect([1, 3, 32, 36, 63, 67, 96, 100].map((x) => planner.reachable(x))).toEqual([
      true,
      false,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
    expect([2, 33, 35, 64, 66, 97, 99].every((x) => planner.reachable(x))).toBe(true);
    const plan = new Plan();
    planner.planTo(65, plan);
    expect([
      plan.len,
      plan.order(0).id,
      plan.nodesAt(0),
      plan.order(1).id,
      plan.nodesAt(1),
    ]).toEqual([2, 's1', 1, 's2', 64]);
  });
});
