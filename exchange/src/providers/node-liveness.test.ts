import { describe, expect, it } from 'vitest';

import { NodeLiveness, SILENT_INTERVALS } from './node-liveness.js';

const INTERVAL = 5_000;
const gpu = (utilizationPercent = 0, uuid = 'GPU-0') => ({
  index: 0,
  name: 'NVIDIA H100 80GB HBM3',
  uuid,
  memoryTotalMib: 81_559,
  utilizationPercent,
  temperatureC: 30,
});
const gpus = [gpu()];

describe('NodeLiveness (D29, issue 18)', () => {
  it("a node is silent after 3 of its agent's intervals without a heartbeat, counted from the attach", () => {
    const l = new NodeLiveness();
    l.watch('cls_a', INTERVAL, [{ id: 'nod_1' }, { id: 'nod_2' }], 0);
    l.heard('cls_a', INTERVAL, [{ id: 'nod_1', gpus, problem: null }], 10_000);
    expect(l.silent(SILENT_INTERVALS * INTERVAL)).toEqual([]);
    expect(l.silent(SILENT_INTERVALS * INTERVAL + 1)).toEqual([
      { clusterId: 'cls_a', nodeIds: ['nod_2'] },
    ]);
    expect(l.silent(10_000 + SILENT_INTERVALS * INTERVAL + 1)).toEqual([
      { clusterId: 'cls_a', nodeIds: ['nod_1', 'nod_2'] },
    ]);
  });

  it('a node its book already holds offline is not reported silent again', () => {
    const l = new NodeLiveness();
    l.watch('cls_a', INTERVAL, [{ id: 'nod_1' }], 0);
    l.saw([{ nodeId: 'nod_1', status: 'offline' }]);
    expect(l.silent(60_000)).toEqual([]);
    l.saw([{ nodeId: 'nod_1', status: 'online' }]);
    expect(l.silent(60_000)).toHaveLength(1);
  });

  it('a reset (a takeover) counts silence from when the nodes are watched again', () => {
    const l = new NodeLiveness();
    l.watch('cls_a', INTERVAL, [{ id: 'nod_1' }], 0);
    l.reset();
    expect(l.size).toBe(0);
    l.watch('cls_a', INTERVAL, [{ id: 'nod_1', status: 'online' }], 100_000);
    expect(l.silent(100_000 + SILENT_INTERVALS * INTERVAL)).toEqual([]);
  });

  it('after a spell of serving nothing, silence is counted again from when it serves', () => {
    const l = new NodeLiveness();
    l.watch('cls_a', INTERVAL, [{ id: 'nod_1', status: 'online' }], 0);
    // Heartbeats refused for a minute (the process did not own the market).
    l.resumed(60_000);
    expect(l.silent(60_000 + SILENT_INTERVALS * INTERVAL)).toEqual([]);
    expect(l.silent(60_001 + SILENT_INTERVALS * INTERVAL)).toHaveLength(1);
  });

  it('writes a node when its facts change, and its heartbeat time at least every touch interval', () => {
    const l = new NodeLiveness(30_000);
    l.watch('cls_a', INTERVAL, [{ id: 'nod_2' }, { id: 'nod_1' }], 0);
    l.heard('cls_a', INTERVAL, [{ id: 'nod_2', gpus, problem: null }], 1_000);
    l.heard('cls_a', INTERVAL, [{ id: 'nod_1', gpus, problem: null }], 1_000);
    // New facts: both, in id order.
    expect(l.dirty(2_000)).toEqual([
      { id: 'nod_1', heardMs: 1_000, gpus: JSON.stringify(gpus), problem: null },
      { id: 'nod_2', heardMs: 1_000, gpus: JSON.stringify(gpus), problem: null },
    ]);
    // The same inventory with new readings: nothing until the touch
    // interval has passed, then the last readings with the heartbeat's time.
    const busy = [gpu(97)];
    l.heard('cls_a', INTERVAL, [{ id: 'nod_1', gpus: busy, problem: null }], 6_000);
    expect(l.dirty(7_000)).toEqual([]);
    expect(l.dirty(32_000)).toEqual([
      { id: 'nod_1', heardMs: 6_000, gpus: JSON.stringify(busy), problem: null },
    ]);
    // Another GPU in the slot is inventory: written at once.
    const swapped = [gpu(0, 'GPU-9')];
    l.heard('cls_a', INTERVAL, [{ id: 'nod_1', gpus: swapped, problem: null }], 32_500);
    expect(l.dirty(32_500)).toEqual([
      { id: 'nod_1', heardMs: 32_500, gpus: JSON.stringify(swapped), problem: null },
    ]);
    // A problem is a change of facts.
    l.heard('cls_a', INTERVAL, [{ id: 'nod_2', gpus, problem: 'xid 79' }], 33_000);
    expect(l.dirty(33_000)).toEqual([
      { id: 'nod_2', heardMs: 33_000, gpus: JSON.stringify(gpus), problem: 'xid 79' },
    ]);
  });

  it('touches at most so many nodes a time, the longest untouched first (no burst of every node at once)', () => {
    const l = new NodeLiveness(30_000);
    for (let i = 0; i < 10; i++) {
      l.heard('cls_a', INTERVAL, [{ id: `nod_${i}`, gpus, problem: null }], 1_000);
    }
    l.dirty(1_000);
    // Heard again; nod_0..nod_4 were touched earlier than the others.
    for (let i = 0; i < 10; i++) {
      l.heard('cls_a', INTERVAL, [{ id: `nod_${i}`, gpus, problem: null }], 40_000);
    }
    expect(l.dirty(40_000, 3)).toHaveLength(3);
    expect(l.dirty(40_000, 3)).toHaveLength(3);
    expect(l.dirty(40_000, 100)).toHaveLength(4);
    expect(l.dirty(40_000, 100)).toEqual([]);
  });

  it('rows that were not written are written the next time', () => {
    const l = new NodeLiveness();
    l.heard('cls_a', INTERVAL, [{ id: 'nod_1', gpus, problem: null }], 1_000);
    const rows = l.dirty(1_000);
    expect(rows).toHaveLength(1);
    expect(l.dirty(1_000)).toEqual([]);
    l.unwritten(rows);
    expect(l.dirty(1_000)).toEqual(rows);
  });
});
