import type { OrderRec } from './order-rec.js';

/**
 * Scratch list of (order, nodes) pairs a walk plans before applying it. It is
 * reused for every command: `len` moves, the arrays only grow, so planning
 * allocates nothing once warm.
 */
export class Plan {
  readonly orders: OrderRec[] = [];
  readonly nodes: number[] = [];
  len = 0;

  push(o: OrderRec, nodes: number): void {
    const i = this.len++;
    if (i < this.orders.length) {
      this.orders[i] = o;
      this.nodes[i] = nodes;
    } else {
      this.orders.push(o);
      this.nodes.push(nodes);
    }
  }

  order(i: number): OrderRec {
    return this.orders[i] as OrderRec;
  }

  nodesAt(i: number): number {
    return this.nodes[i] as number;
  }
}
