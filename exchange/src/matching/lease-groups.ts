import type { Fill, Millis } from './types.js';

/** The fills of one matching step that become one lease (D11). */
export interface LeaseGroup {
  readonly clusterId: string;
  /** When the lease starts (D27): the fills' common leaseStartAt. */
  readonly leaseStartAt: Millis;
  readonly fills: readonly Fill[];
  readonly nodes: number;
}

/**
 * D11: one matching step makes one lease per provider cluster (a lease is one
 * namespace on one cluster), and a lease has one start: fills of one cluster
 * whose leases start at different times (a resale's later window start, D27)
 * make separate leases. Groups in the order their first fill was taken, fills
 * in the order they were taken.
 */
export function leaseGroups(fills: readonly Fill[]): LeaseGroup[] {
  const byKey = new Map<
    string,
    { clusterId: string; leaseStartAt: Millis; fills: Fill[]; nodes: number }
  >();
  for (const f of fills) {
    const key = `${f.leaseStartAt}/${f.clusterId}`;
    let g = byKey.get(key);
    if (g === undefined) {
      g = { clusterId: f.clusterId, leaseStartAt: f.leaseStartAt, fills: [], nodes: 0 };
      byKey.set(key, g);
    }
    g.fills.push(f);
    g.nodes += f.nodes;
  }
  return [...byKey.values()];
}
