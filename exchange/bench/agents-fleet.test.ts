// What a simulated agent of the agents bench sends is what a real agent
// with 8 H100s per node sends (nvidia-smi's names and GPU-<uuid> form).

import { describe, expect, it } from 'vitest';

import { inventory } from './agents-fleet.js';

describe('inventory', () => {
  it('both nodes of the cluster, 8 GPUs each, every UUID distinct and in nvidia-smi form', () => {
    const nodes = inventory(42, ['gpu-a', 'gpu-b']);
    expect(nodes.map((n) => [n.hostname, n.healthy, n.gpus.length])).toEqual([
      ['gpu-a', true, 8],
      ['gpu-b', true, 8],
    ]);
    const gpus = nodes.flatMap((n) => n.gpus);
    expect(gpus.map((g) => g.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7]);
    for (const g of gpus) {
      expect(g.name).toBe('NVIDIA H100 80GB HBM3');
      expect(g.uuid).toMatch(/^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(g.utilizationPercent).toBeGreaterThanOrEqual(0);
      expect(g.utilizationPercent).toBeLessThanOrEqual(100);
    }
    const uuids = new Set([
      ...gpus.map((g) => g.uuid),
      ...inventory(43, ['gpu-a', 'gpu-b']).flatMap((n) => n.gpus.map((g) => g.uuid)),
    ]);
    expect(uuids.size).toBe(32);
  });
});
