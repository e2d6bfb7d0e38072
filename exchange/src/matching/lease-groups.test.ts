import { describe, expect, it } from 'vitest';

import { leaseGroups } from './lease-groups.js';
import { OrderBook } from './order-book.js';
import type { OrderInput } from './types.js';

const T0 = Date.UTC(2026, 10, 22);

function sell(id: string, clusterId: string, nodes: number, price: number): OrderInput {
  return {
    id,
    side: 'sell',
    type: 'limit',
    accountId: `acc-${clusterId}`,
    orgId: `org-${clusterId}`,
    nodes,
    durationHours: 48,
    limitPrice: price,
    clusterId,
  };
}

describe('D11: one lease per provider cluster per matching step', () => {
  it('groups a step that took three sells on two clusters into two leases', () => {
    // given: asks on cluster A at 100 and 102, on cluster B at 101
    const book = new OrderBook();
    book.place(sell('a1', 'A', 1, 100), T0);
    book.place(sell('b1', 'B', 2, 101), T0);
    book.place(sell('a2', 'A', 3, 102), T0);
    // when: an all-or-nothing buy of 5 nodes sweeps them in one step
    const r = book.place(
      {
        id: 'buy',
        side: 'buy',
        type: 'limit',
        accountId: 'acc-x',
        orgId: 'org-x',
        nodes: 5,
        durationHours: 4,
        limitPrice: 110,
      },
      T0 + 1,
    );
    // then: one step, two leases, cluster A first (its ask was taken first)
    const steps = r.events.filter((e) => e.type === 'matched');
    expect(steps).toHaveLength(1);
    const step = steps[0];
    if (step?.type !== 'matched') throw new Error('no step');
    const groups = leaseGroups(step.fills);
    expect(groups.map((g) => [g.clusterId, g.nodes, g.fills.map((f) => f.sellOrderId)])).toEqual([
      ['A', 3, ['a1', 'a2']],
      ['B', 2, ['b1']],
    ]);
  });

  it('D27: fills of one cluster whose leases start at different times make separate leases', () => {
    // given: a provider ask on cluster A and a resale of a lease on A, available from 0:30
    const book = new OrderBook();
    book.place(sell('a1', 'A', 1, 100), T0);
    book.place(
      {
        ...sell('r1', 'A', 1, 101),
        accountId: 'acc-reseller',
        orgId: 'org-reseller',
        allOrNothing: true,
        windowStartAt: T0 + 30 * 60_000,
        windowEndAt: T0 + 10 * 3_600_000,
      },
      T0,
    );
    // when: a 2-node buy takes both at T0 + 1
    const r = book.place(
      {
        id: 'buy',
        side: 'buy',
        type: 'limit',
        accountId: 'acc-x',
        orgId: 'org-x',
        nodes: 2,
        durationHours: 4,
        limitPrice: 110,
      },
      T0 + 1,
    );
    // then: one step, two leases on A: one from the match, one from 0:30
    const step = r.events.find((e) => e.type === 'matched');
    if (step?.type !== 'matched') throw new Error('no step');
    expect(
      leaseGroups(step.fills).map((g) => [g.clusterId, g.leaseStartAt, g.nodes, g.fills.length]),
    ).toEqual([
      ['A', T0 + 1, 1, 1],
      ['A', T0 + 30 * 60_000, 1, 1],
    ]);
  });

  it('makes no lease of an empty step', () => {
    expect(leaseGroups([])).toEqual([]);
  });
});
