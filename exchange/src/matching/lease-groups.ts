import type { Fill } from './types.js';

/** The fills of one matching step that become one lease (D11). */
export interface LeaseGroup {
  readonly clusterId: string;
  readonly fills: readonly Fill[];
  readonly nodes: number;
}

/**
 * D11: one matching step makes one lease per provider cluster (a lease is one
 * namespace on one cluster). Groups a step's fills by cluster, clusters in the
 * order their first fill was taken, fills in the order they were taken.
 */
export function leaseGroups(fills: readonly Fill[]): LeaseGroup[] {
  const byCluster = new Map<string, { clusterId: string; fills: Fill[]; nodes: number }>();
  for (const f of fills) {
    let g = byCluster.get(f.clusterId);
    if (g === undefined) {
      g = { clusterId: f.clusterId, fills: [], nodes: 0 };
      byCluster.set(f.clusterId, g);
    }
    g.fills.push(f);
    g.nodes += f.nodes;
  }
  return [...byCluster.values()];
}
