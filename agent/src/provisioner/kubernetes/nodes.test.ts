import { describe, expect, it } from 'vitest';
import type { V1Node } from '@kubernetes/client-node';

import { leasesOnNode, nodeHealth, withLease, withoutLease } from './nodes.js';

const A = 'lse_01jdq3m5x0aaaaaaaaaaaaaaaa';
const B = 'lse_01jdq3m5x0bbbbbbbbbbbbbbbb';

function node(over: Partial<V1Node> = {}): V1Node {
  return {
    metadata: {
      name: 'gpu-node-a',
      labels: {
        'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
        'nvidia.com/gpu.memory': '81559',
      },
    },
    spec: {},
    status: {
      allocatable: { 'nvidia.com/gpu': '8', cpu: '96' },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
    },
    ...over,
  };
}

describe('nodes in kubernetes mode: health from Node status, lease labels and taints', () => {
  it('a Ready node with allocatable GPUs is healthy and lists them', () => {
    const h = nodeHealth('gpu-node-a', node());
    expect(h.healthy).toBe(true);
    expect(h.problem).toBe('');
    expect(h.gpus).toHaveLength(8);
    expect(h.gpus[7]).toEqual({
      index: 7,
      name: 'NVIDIA-H100-80GB-HBM3',
      uuid: 'gpu-node-a/nvidia.com/gpu/7',
      memoryTotalMib: 81559,
      utilizationPercent: 0,
      temperatureC: 0,
    });
  });

  it('missing, not Ready, cordoned or GPU-less nodes are unhealthy, with why', () => {
    expect(nodeHealth('x', undefined)).toEqual({
      hostname: 'x',
      healthy: false,
      problem: 'no Kubernetes node named x',
      gpus: [],
    });
    const notReady = node({
      status: {
        allocatable: { 'nvidia.com/gpu': '8' },
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'KubeletNotReady',
            message: 'PLEG is not healthy',
          },
        ],
      },
    });
    expect(nodeHealth('gpu-node-a', notReady).problem).toBe(
      'the node is not Ready (KubeletNotReady: PLEG is not healthy)',
    );
    expect(nodeHealth('gpu-node-a', node({ spec: { unschedulable: true } })).problem).toBe(
      'the node is cordoned',
    );
    const noGpu = node({
      status: { allocatable: { cpu: '8' }, conditions: [{ type: 'Ready', status: 'True' }] },
    });
    expect(nodeHealth('gpu-node-a', noGpu)).toMatchObject({
      healthy: false,
      gpus: [],
      problem: 'the node has no allocatable nvidia.com/gpu',
    });
  });

  it('a lease labels and taints its node; a resale replaces the former lease on it', () => {
    const n = withLease(node({ spec: { taints: [{ key: 'other', effect: 'NoExecute' }] } }), A)!;
    expect(n.metadata?.labels?.['gpux.io/lease']).toBe(A);
    expect(n.spec?.taints).toEqual([
      { key: 'other', effect: 'NoExecute' },
      { key: 'gpux.io/lease', value: A, effect: 'NoSchedule' },
    ]);
    expect(withLease(n, A)).toBeUndefined();
    const resold = withLease(n, B)!;
    expect(resold.spec?.taints).toEqual([
      { key: 'other', effect: 'NoExecute' },
      { key: 'gpux.io/lease', value: B, effect: 'NoSchedule' },
    ]);
    // The former lease's revocation leaves the next lease's label and taint alone.
    expect(withoutLease(resold, A)).toBeUndefined();
    const released = withoutLease(resold, B)!;
    expect(released.metadata?.labels?.['gpux.io/lease']).toBeUndefined();
    expect(released.spec?.taints).toEqual([{ key: 'other', effect: 'NoExecute' }]);
    expect(leasesOnNode(resold)).toEqual([B]);
  });
});
