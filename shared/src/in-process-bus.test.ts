import { describe, expect, it } from 'vitest';

import { InProcessBus, subjectMatches } from './in-process-bus.js';
import type { BusMessage } from './in-process-bus.js';

/** The next `n` deliveries to a consumer. */
function take(bus: InProcessBus, name: string, filter: string, n: number, ackWaitMs = 30_000) {
  const got: BusMessage[] = [];
  return new Promise<BusMessage[]>((resolve) => {
    const sub = bus.consumer(name, { filterSubject: filter, ackWaitMs }).consume((m) => {
      got.push(m);
      if (got.length === n) {
        sub.stop();
        resolve(got);
      }
    });
  });
}

describe('subjectMatches (NATS wildcards)', () => {
  it('matches * as one token and > as the rest', () => {
    expect(subjectMatches('gpux.cluster.c1.>', 'gpux.cluster.c1.lease.revoke')).toBe(true);
    expect(subjectMatches('gpux.cluster.c1.>', 'gpux.cluster.c2.lease.revoke')).toBe(false);
    expect(subjectMatches('gpux.cluster.c1.>', 'gpux.cluster.c1')).toBe(false);
    expect(subjectMatches('gpux.*.c1.lease.provision', 'gpux.cluster.c1.lease.provision')).toBe(
      true,
    );
    expect(subjectMatches('a.b', 'a.b.c')).toBe(false);
  });
});

describe('InProcessBus', () => {
  it('deduplicates by message id, like a JetStream duplicate window', () => {
    const bus = new InProcessBus();
    expect(bus.publish('s.1', 'evt_a', '{}').duplicate).toBe(false);
    expect(bus.publish('s.1', 'evt_a', '{}').duplicate).toBe(true);
  });

  it('keeps at least the newest `retain` messages, and drops the oldest in steps (at most 10 % over)', async () => {
    const bus = new InProcessBus(100);
    for (let i = 0; i < 1_000; i++) bus.publish('s.1', `evt_${i}`, `${i}`);
    // The newest are still deduplicated; one long dropped is taken again.
    expect(bus.publish('s.1', 'evt_999', 'x').duplicate).toBe(true);
    expect(bus.publish('s.1', 'evt_900', 'x').duplicate).toBe(true);
    expect(bus.publish('s.1', 'evt_0', 'again').duplicate).toBe(false);
    // A consumer made now gets what is retained, in order, newest last.
    const all = bus.consumer('late', { filterSubject: 's.>' });
    const got: string[] = [];
    const sub = all.consume((m) => {
      got.push(m.data);
      m.ack();
    });
    await new Promise((r) => setTimeout(r, 10));
    sub.stop();
    expect(got.length).toBeGreaterThanOrEqual(100);
    expect(got.length).toBeLessThanOrEqual(110);
    expect(got.slice(-2)).toEqual(['999', 'again']);
  });

  it('a consumer made later gets every retained message its filter matches, in order', async () => {
    const bus = new InProcessBus();
    bus.publish('gpux.cluster.c1.lease.provision', 'e1', '1');
    bus.publish('gpux.cluster.c2.lease.provision', 'e2', '2');
    bus.publish('gpux.cluster.c1.lease.revoke', 'e3', '3');
    const got = await take(bus, 'agent_c1', 'gpux.cluster.c1.>', 2);
    expect(got.map((m) => m.id)).toEqual(['e1', 'e3']);
    expect(got.map((m) => m.deliveryCount)).toEqual([1, 1]);
  });

  it('an acked message is never delivered again; one not acked in time is, with its count', async () => {
    const bus = new InProcessBus();
    bus.publish('s.x', 'keep', 'k');
    bus.publish('s.x', 'done', 'd');
    const first = await take(bus, 'c', 's.>', 2, 30);
    first.find((m) => m.id === 'done')?.ack();
    const again = await take(bus, 'c', 's.>', 1, 30);
    expect(again.map((m) => [m.id, m.deliveryCount])).toEqual([['keep', 2]]);
    again[0]?.ack();
    expect(bus.consumer('c', { filterSubject: 's.>' }).unacked).toBe(0);
  });

  it('nak delivers again', async () => {
    const bus = new InProcessBus();
    bus.publish('s.x', 'm', 'm');
    const [m] = await take(bus, 'c', 's.>', 1);
    m?.nak();
    const [again] = await take(bus, 'c', 's.>', 1);
    expect(again?.deliveryCount).toBe(2);
  });
});
