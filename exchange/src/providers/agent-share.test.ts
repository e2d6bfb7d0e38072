// Each provider's share of the agents' service (issue 18): rates per cluster
// and call kind over sliding windows, scaled with the cluster's nodes, and
// calls in flight per provider scaled with its clusters.

import { describe, expect, it } from 'vitest';

import { AgentShare, DEFAULT_AGENT_SHARE, IN_FLIGHT_RETRY_MS } from './agent-share.js';
import type { Exhausted } from './agent-share.js';

class Clock {
  t = 1_000_000;
  now = (): number => this.t;
}

const cluster = (id: string, nodes = 2, heartbeatMs: number | null = 5_000) => ({
  id,
  nodes,
  heartbeatMs,
});

describe('AgentShare', () => {
  it('takes at most twice a declared interval of heartbeats per cluster, and says when the next fits', () => {
    const clock = new Clock();
    const share = new AgentShare(DEFAULT_AGENT_SHARE, clock.now);
    const a = cluster('cls_a');
    expect(share.take('heartbeat', a)).toBeUndefined();
    clock.t += 1_000;
    expect(share.take('heartbeat', a)).toBeUndefined();
    clock.t += 1_000;
    const over = share.take('heartbeat', a);
    // Counted over 4.5 s of the 5 s: the first heartbeat leaves it 2.5 s from now.
    expect(over).toEqual({
      retryAfterMs: 2_500,
      message:
        'heartbeats of cluster cls_a: at most 2 per declared interval of 5 s (counted over 90 % of it) (GPUX_AGENT_HEARTBEATS_PER_INTERVAL); retry after 2500 ms',
    });
    // Another cluster of the same provider has its own.
    expect(share.take('heartbeat', cluster('cls_b'))).toBeUndefined();
    clock.t += 2_500;
    expect(share.take('heartbeat', a)).toBeUndefined();
    // A refused call is not counted: the window is full again only now.
    expect(share.take('heartbeat', a)?.retryAfterMs).toBe(1_000);
  });

  it('an agent whose timer runs a little early, with one heartbeat more in between, keeps within', () => {
    const clock = new Clock();
    const share = new AgentShare(DEFAULT_AGENT_SHARE, clock.now);
    const a = cluster('cls_a');
    for (let i = 0; i < 10; i++) {
      expect(share.take('heartbeat', a)).toBeUndefined();
      clock.t += 1_500;
      // A lease ended: one heartbeat more.
      expect(share.take('heartbeat', a)).toBeUndefined();
      clock.t += 3_490;
    }
  });

  it('sells and reports per minute grow with the cluster: one share per 10 nodes begun', () => {
    const clock = new Clock();
    const share = new AgentShare({ ...DEFAULT_AGENT_SHARE, sellsPerMinute: 3 }, clock.now);
    const taken = (c: ReturnType<typeof cluster>): number => {
      let n = 0;
      while (share.take('sell', c) === undefined) n++;
      return n;
    };
    expect(taken(cluster('cls_small', 2))).toBe(3);
    expect(taken(cluster('cls_ten', 10))).toBe(3);
    expect(taken(cluster('cls_eleven', 11))).toBe(6);
    expect(taken(cluster('cls_large', 1_000))).toBe(300);
    // Reports and reads are counted apart from sells.
    expect(share.take('report', cluster('cls_small', 2))).toBeUndefined();
    expect(share.take('read', cluster('cls_small', 2))).toBeUndefined();
    const over = share.take('sell', cluster('cls_small', 2)) as Exhausted;
    expect(over.retryAfterMs).toBe(60_000);
    expect(over.message).toContain('(GPUX_AGENT_SELLS_PER_MINUTE)');
  });

  it('bounds the calls in flight of a provider, by its clusters', () => {
    const share = new AgentShare({ ...DEFAULT_AGENT_SHARE, callsInFlight: 2 });
    const one = [share.enter('acc_a', 1), share.enter('acc_a', 1)];
    expect(one.every((e) => typeof e === 'function')).toBe(true);
    expect(share.enter('acc_a', 1)).toEqual({
      retryAfterMs: IN_FLIGHT_RETRY_MS,
      message: `at most 2 calls of this provider at once (GPUX_AGENT_CALLS_IN_FLIGHT per cluster); retry after ${IN_FLIGHT_RETRY_MS} ms`,
    });
    // Another provider is not held back; a provider of 3 clusters has 6.
    expect(typeof share.enter('acc_b', 1)).toBe('function');
    expect(typeof share.enter('acc_a', 3)).toBe('function');
    // A call that ends frees its place, once however often it says so.
    const leave = one[0] as () => void;
    leave();
    leave();
    expect(typeof share.enter('acc_a', 1)).toBe('object');
    const both = share.enter('acc_a', 4);
    expect(typeof both).toBe('function');
  });
});
