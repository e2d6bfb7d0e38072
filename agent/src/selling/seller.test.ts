import { NodeStatus } from '@gpux/proto';
import type { Node } from '@gpux/proto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { SILENT_LOGGER } from '../logger.js';
import type { LogFn, Logger } from '../logger.js';
import { FakeExchange } from '../testing/fake-exchange.js';
import { OwnSells } from '../state/own-sells.js';
import { Seller } from './seller.js';

const CLUSTER = 'cls_01jdq3m5x0aaaaaaaaaaaaaaaa';
const LEASE = 'lse_01jdq3m5x0aaaaaaaaaaaaaaaa';

const node = (hostname: string, leaseId = ''): Node => ({
  nodeId: `nod_${hostname}`,
  hostname,
  status: NodeStatus.NODE_STATUS_ONLINE,
  leaseId,
});

function setUp(
  leased: Set<string> = new Set(),
  logger: Logger = SILENT_LOGGER,
  /** null: no price (GPUX_ASK_PRICE unset). */
  ask: number | null = 250,
) {
  const exchange = new FakeExchange(CLUSTER, ['node-a', 'node-b']);
  let now = 1_000_000;
  const seller = new Seller({
    clusterId: CLUSTER,
    exchange,
    askCents: ask ?? undefined,
    ownSells: new OwnSells(undefined, logger),
    listHours: 168,
    renewBeforeMs: 15 * 60_000,
    leasedHostnames: () => leased,
    logger,
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
      ownSells: new OwnSells(undefined, SILENT_LOGGER),
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

describe('a refusal of the book that lasts is logged once, not at every heartbeat', () => {
  /** The lines logged, as `level: message`. */
  function logged(): { logger: Logger; lines: string[] } {
    const lines: string[] = [];
    const at =
      (level: string): LogFn =>
      (a: object | string, msg?: string) =>
        void lines.push(`${level}: ${typeof a === 'string' ? a : (msg ?? '')}`);
    return {
      lines,
      logger: { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') },
    };
  }

  it("the exchange's operators cordoned the cluster: one sell asked a round, the cordon logged once, the sells taken again once", async () => {
    const { logger, lines } = logged();
    const { exchange, seller, clock } = setUp(new Set(), logger);
    const view = () => ({ nodes: [node('node-a'), node('node-b')], atMs: clock.now() });
    exchange.refusal = {
      code: 'cluster_cordoned',
      message: `cluster ${CLUSTER} is cordoned by the exchange's operators`,
    };
    for (let round = 0; round < 5; round++) {
      clock.tick(5_000);
      await seller.tick(view());
    }
    // One sell a round (not one per free node), and no tighter.
    expect(exchange.of('publishSell')).toHaveLength(5);
    expect(lines.filter((l) => l.includes('cordoned'))).toEqual([
      expect.stringMatching(/^info: the cluster is cordoned/),
    ]);
    expect(lines.filter((l) => /^(warn|error):/.test(l))).toEqual([]);
    expect(seller.status.refusal).toMatchObject({ code: 'cluster_cordoned', atMs: clock.now() });

    // Uncordoned: the next round lists both nodes.
    exchange.refusal = undefined;
    clock.tick(5_000);
    await seller.tick(view());
    expect(exchange.sells).toHaveLength(2);
    expect(seller.status.refusal).toBeUndefined();
    expect(lines.filter((l) => l.includes('takes the sells again'))).toHaveLength(1);
  });

  it('another refusal (the collar) is logged once while it stays the same, again when it changes', async () => {
    const { logger, lines } = logged();
    const { exchange, seller, clock } = setUp(new Set(), logger);
    const view = () => ({ nodes: [node('node-a')], atMs: clock.now() });
    exchange.refusal = {
      code: 'price_out_of_collar',
      message: 'limit_price must be $1.00 to $3.00',
    };
    for (let round = 0; round < 3; round++) {
      clock.tick(5_000);
      await seller.tick(view());
    }
    exchange.refusal = {
      code: 'price_out_of_collar',
      message: 'limit_price must be $1.10 to $3.30',
    };
    clock.tick(5_000);
    await seller.tick(view());
    expect(exchange.of('publishSell')).toHaveLength(4);
    expect(lines.filter((l) => l.startsWith('warn: the exchange refused the sell'))).toHaveLength(
      2,
    );
  });
});

describe('an agent without a price (GPUX_ASK_PRICE unset, issue 23)', () => {
  it('withdraws the sells it listed, remembered across a restart; leaves sells listed by hand alone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpux-own-sells-'));
    const path = join(dir, 'sells.json');
    try {
      const exchange = new FakeExchange(CLUSTER, ['node-a', 'node-b']);
      const seller = (askCents: number | undefined, ownSells: OwnSells) =>
        new Seller({
          clusterId: CLUSTER,
          exchange,
          askCents,
          ownSells,
          listHours: 168,
          renewBeforeMs: 15 * 60_000,
          leasedHostnames: () => new Set(),
          logger: SILENT_LOGGER,
        });
      const free = { nodes: [node('node-a'), node('node-b')], atMs: Date.now() };
      // The agent with a price lists its sell, then stops; a sell is listed by hand.
      const priced = new OwnSells(path, SILENT_LOGGER);
      await priced.load();
      await seller(250, priced).tick({ nodes: [node('node-a')], atMs: Date.now() });
      const agents = exchange.sells.map((s) => s.orderId);
      expect(agents).toHaveLength(1);
      await exchange.publishSell({
        clusterId: CLUSTER,
        nodes: 1,
        priceCents: 300,
        windowHours: 24,
      });

      // Restarted without a price: its own sell goes, the hand-listed one stays, none listed.
      const restarted = new OwnSells(path, SILENT_LOGGER);
      await restarted.load();
      const unpriced = seller(undefined, restarted);
      await unpriced.tick(free);
      expect(exchange.sells.map((s) => s.priceCents)).toEqual([300]);
      expect(exchange.of('withdrawSell')).toEqual([{ clusterId: CLUSTER, orderId: agents[0] }]);
      expect(unpriced.status).toMatchObject({ askCents: null, listedNodes: 1, freeNodes: 2 });
      // And it stays so: the next round lists nothing and withdraws nothing more.
      await unpriced.tick({ ...free, atMs: Date.now() });
      expect(exchange.of('publishSell')).toHaveLength(2);
      expect(exchange.of('withdrawSell')).toHaveLength(1);
      expect(restarted.has(agents[0] ?? '')).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
