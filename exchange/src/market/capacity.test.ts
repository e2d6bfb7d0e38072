import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { addNode, emptyCluster, freeNodes, setNodeStatus } from './capacity.js';
import type { NodeState } from './capacity.js';

const STATUSES = ['available', 'online', 'offline'] as const;

/** D31 by its definition: nodes not offline, less those leased and those offered. */
function recount(c: ReturnType<typeof emptyCluster>): number {
  return c.nodes.filter((n) => n.status !== 'offline').length - c.leased.size - c.openSellNodes;
}

describe('cluster capacity (D31)', () => {
  it('freeNodes counts the nodes that are up, less leased and offered, whatever the status changes (D29)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...STATUSES), { minLength: 1, maxLength: 12 }),
        fc.array(fc.tuple(fc.nat(), fc.constantFrom(...STATUSES)), { maxLength: 40 }),
        fc.nat({ max: 3 }),
        fc.nat({ max: 3 }),
        (initial, changes, leased, offered) => {
          const c = emptyCluster('cls_a', 'acc_p');
          initial.forEach((status, i) => addNode(c, { id: `nod_${i}`, hostname: `h${i}`, status }));
          for (let i = 0; i < Math.min(leased, initial.length); i++)
            c.leased.set(`nod_${i}`, 'lse_x');
          c.openSellNodes = offered;
          expect(freeNodes(c)).toBe(recount(c));
          for (const [k, status] of changes) {
            const n = c.nodes[k % c.nodes.length] as NodeState;
            setNodeStatus(c, n, status);
            expect(n.status).toBe(status);
            expect(freeNodes(c)).toBe(recount(c));
          }
        },
      ),
    );
  });
});
