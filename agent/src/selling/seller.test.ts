import { NodeStatus } from '@gpux/proto';
import type { Node } from '@gpux/proto';
import { describe, expect, it } from 'vitest';

import { SILENT_LOGGER } from '../logger.js';
import { FakeExchange } from '../testing/fake-exchange.js';
import { Seller } from './seller.js';

const CLUSTER = 'cls_01jdq3m5x0aaaaaaaaaaaaaaaa';
const LEASE = 'lse_01jdq3m5x0aaaaaaaaaaaaaaaa';

const node = (hostname: string, leaseId = ''): Node => ({
  nodeId: `nod_${hostname}`,
  hostname,
  status: NodeStatus.NODE_STATUS_ONLINE,
  leaseId,
});

function setUp(leased: Set<string> = new Set()) {
  const exchange = new FakeExchange(CLUSTER, ['node-a', 'node-b']);
  let now = 1_000_000;
  const seller = new Seller({
    clusterId: CLUSTER,
    exchange,
    askCents: 250,
    listHours: 168,
    renewBeforeMs: 15 * 60_000,
    leasedHostnames: () => leased,
    logger: SILENT_LOGGER,
    now: () => now,
  });
  return { exchange, seller, clock: { tick: (ms: number) => (now += ms), now: () => now } };
}

describe('the seller lists only nodes it does not know are leased', () => {
  it('a sell filled since the last heartbeat answer: its node is not offered again (no "0 free nodes")', async () => {
    const { exchange, seller, clock } = setUp();
    const before = { nodes: [node('node-a'), node('node-b')], atMs: clock.now() };
    await seller.tick(before);
    expect(exchange.of('publishSell')).toHaveLength(2);

    // A buyer takes one sell; the next round still has the heartbeat answer from before the fill.
    clock.tick(1_000);
    exchange.sells = exchange.sells.slice(1);
    await seller.tick(before);
    expect(exchange.of('publishSell')).toHaveLength(2);
    expect(seller.status).toMatchObject({ freeNodes: 1, listedNodes: 1, refusal: undefined });

    // The next heartbeat (sent after the fill was seen) shows the node leased: still one sell.
    clock.tick(1_000);
    const after = { nodes: [node('node-a', LEASE), node('node-b')], atMs: clock.now() };
    await seller.tick(after);
    expect(exchange.of('publishSell')).toHaveLength(2);

    // Its lease ends, a heartbeat shows it free: listed again.
    clock.tick(1_000);
    await seller.tick({ nodes: [node('node-a'), node('node-b')], atMs: clock.now() });
    expect(exchange.of('publishSell')).toHaveLength(3);
  });

  it('a lease the agent was told to provision: its nodes are not offered, whatever the answer shows', async () => {
    const leased = new Set(['node-b']);
    const { exchange, seller, clock } = setUp(leased);
    await seller.tick({ nodes: [node('node-a'), node('node-b')], atMs: clock.now() });
    expect(exchange.of('publishSell')).toHaveLength(1);
    expect(seller.status.freeNodes).toBe(1);
    leased.clear();
    clock.tick(1_000);
    await seller.tick({ nodes: [node('node-a'), node('node-b')], atMs: clock.now() });
    expect(exchange.of('publishSell')).toHaveLength(2);
  });

  it('its own withdrawals are not fills', async () => {
    const { exchange, seller, clock } = setUp();
    const view = { nodes: [node('node-a')], atMs: clock.now() };
    await seller.tick(view);
    // The ask changed: the sell at the old price is withdrawn and listed again at once.
    const repriced = new Seller({
      clusterId: CLUSTER,
      exchange,
      askCents: 300,
      listHours: 168,
      renewBeforeMs: 15 * 60_000,
      leasedHostnames: () => new Set(),
      logger: SILENT_LOGGER,
      now: () => clock.now(),
    });
    await repriced.tick(view);
    await repriced.tick(view);
    expect(exchange.of('withdrawSell')).toHaveLength(1);
    expect(exchange.sells.map((s) => s.priceCents)).toEqual([300]);
  });
});
