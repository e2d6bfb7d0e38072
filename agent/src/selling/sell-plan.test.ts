import { NodeStatus } from '@gpux/proto';
import { describe, expect, it } from 'vitest';

import { planSells } from './sell-plan.js';
import type { NodeView, SellView } from './sell-plan.js';

const NOW = 1_000_000_000;
const HOUR = 3_600_000;
const online = (leaseId = ''): NodeView => ({ status: NodeStatus.NODE_STATUS_ONLINE, leaseId });
const offline: NodeView = { status: NodeStatus.NODE_STATUS_OFFLINE, leaseId: '' };

function sell(orderId: string, over: Partial<SellView> = {}): SellView {
  return { orderId, priceCents: 250, remainingNodes: 1, expiresAtMs: NOW + 100 * HOUR, ...over };
}

const plan = (nodes: NodeView[], sells: SellView[]) =>
  planSells({ nodes, sells, askCents: 250, nowMs: NOW, renewBeforeMs: HOUR / 4 });

describe("the seller's decision", () => {
  it('without an ask (GPUX_ASK_PRICE unset): every open sell withdrawn, none listed', () => {
    expect(
      planSells({
        nodes: [online(), online()],
        sells: [
          sell('ord_1'),
          sell('ord_2', { priceCents: 300 }),
          sell('ord_3', { remainingNodes: 0 }),
        ],
        askCents: undefined,
        nowMs: NOW,
        renewBeforeMs: HOUR / 4,
      }),
    ).toEqual({ free: 2, withdraw: ['ord_1', 'ord_2'], publish: 0 });
  });

  it('lists one sell per free node: online, not leased', () => {
    expect(plan([online(), online('lse_a'), offline, online()], [])).toEqual({
      free: 2,
      withdraw: [],
      publish: 2,
    });
  });

  it('nodes the agent knows are leased (the view not showing it yet) are not free', () => {
    expect(
      planSells({
        nodes: [online(), online(), online()],
        knownLeased: 2,
        sells: [sell('ord_1'), sell('ord_2')],
        askCents: 250,
        nowMs: NOW,
        renewBeforeMs: HOUR / 4,
      }),
    ).toEqual({ free: 1, withdraw: ['ord_2'], publish: 0 });
  });

  it('free nodes already offered by open sells are not listed twice', () => {
    expect(plan([online(), online(), online()], [sell('ord_1'), sell('ord_2')])).toEqual({
      free: 3,
      withdraw: [],
      publish: 1,
    });
  });

  it('D12: a sell about to expire (window end − 1 h) is withdrawn and listed again', () => {
    const soon = sell('ord_old', { expiresAtMs: NOW + HOUR / 8 });
    expect(plan([online()], [soon])).toEqual({ free: 1, withdraw: ['ord_old'], publish: 1 });
  });

  it('a sell at another price than the ask is withdrawn and the node listed at the ask', () => {
    expect(plan([online()], [sell('ord_1', { priceCents: 300 })])).toEqual({
      free: 1,
      withdraw: ['ord_1'],
      publish: 1,
    });
  });

  it('offers beyond the free nodes (a node went offline) are withdrawn, freshest kept', () => {
    const older = sell('ord_old', { expiresAtMs: NOW + 10 * HOUR });
    const newer = sell('ord_new', { expiresAtMs: NOW + 20 * HOUR });
    expect(plan([online(), offline], [older, newer])).toEqual({
      free: 1,
      withdraw: ['ord_old'],
      publish: 0,
    });
  });

  it('a lease ended: its node is free again and listed', () => {
    expect(plan([online(), online()], [sell('ord_1')]).publish).toBe(1);
  });

  it('filled sells (nothing remaining) are neither kept nor withdrawn', () => {
    expect(plan([online()], [sell('ord_1', { remainingNodes: 0 })])).toEqual({
      free: 1,
      withdraw: [],
      publish: 1,
    });
  });
});
