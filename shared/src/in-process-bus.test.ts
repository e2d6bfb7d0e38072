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

describe('InProcessBus: which consumers a publish reaches', () => {
  /** Every consumer's deliveries (subject ids), and all deliveries in the order they came. */
  function consumers(bus: InProcessBus, filters: Record<string, string>) {
    const got: Record<string, string[]> = {};
    const sequence: string[] = [];
    for (const [name, filterSubject] of Object.entries(filters)) {
      got[name] = [];
      bus.consumer(name, { filterSubject }).consume((m) => {
        got[name]?.push(m.id);
        sequence.push(`${name}:${m.id}`);
        m.ack();
      });
    }
    return { got, sequence };
  }
  const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 0));

  it('the consumer of its exact subject and every matching wildcard one, no other', async () => {
    const bus = new InProcessBus();
    const { got } = consumers(bus, {
      exact: 'gpux.cluster.c1.lease.revoke',
      exactOther: 'gpux.cluster.c1.lease.provision',
      shorter: 'gpux.cluster.c1',
      longer: 'gpux.cluster.c1.lease.revoke.x',
      c1: 'gpux.cluster.c1.>',
      c10: 'gpux.cluster.c10.>',
      c2: 'gpux.cluster.c2.>',
      anyCluster: 'gpux.cluster.*.lease.revoke',
      anyClusterProvision: 'gpux.cluster.*.lease.provision',
      leading: '*.cluster.c1.lease.*',
      all: '>',
      oneToken: '*',
      literalStar: 'gpux.cluster.c1*.>',
    });
    bus.publish('gpux.cluster.c1.lease.revoke', 'e1', '{}');
    await settle();
    const reached = Object.keys(got).filter((name) => got[name]?.includes('e1'));
    expect(reached.sort()).toEqual(['all', 'anyCluster', 'c1', 'exact', 'leading'].sort());
    // Each once.
    expect(Object.values(got).flat()).toHaveLength(5);
  });

  it('a message reaching several consumers is offered to them in the order they were made', async () => {
    const bus = new InProcessBus();
    const { sequence } = consumers(bus, {
      w1: 'a.>',
      x1: 'a.b.c',
      w2: '*.b.c',
      x2: 'a.b.c',
      w3: 'a.b.>',
      other: 'a.c.>',
    });
    bus.publish('a.b.c', 'm1', '{}');
    bus.publish('a.b.d', 'm2', '{}');
    await settle();
    expect(sequence).toEqual(['w1:m1', 'x1:m1', 'w2:m1', 'x2:m1', 'w3:m1', 'w1:m2', 'w3:m2']);
  });

  it('reaches exactly the consumers subjectMatches names, for subjects and filters of every shape', async () => {
    const filters = [
      'a',
      'a.b',
      'a.b.c',
      'a.b.',
      'a..c',
      '.b',
      '',
      '>',
      '*',
      '*.*',
      'a.>',
      'a.*',
      'a.*.c',
      'a.b.>',
      '*.b.>',
      '*.*.>',
      'a.b.c.>',
      'ab.>',
      'a*.>',
    ];
    const subjects = [
      'a',
      'a.b',
      'a.b.c',
      'a.b.c.d',
      'a.b.',
      'a..c',
      '.b',
      '',
      'ab.c',
      'a*.c',
      'b.b.c',
    ];
    const bus = new InProcessBus();
    const { got } = consumers(bus, Object.fromEntries(filters.map((f, i) => [`f${i}`, f])));
    subjects.forEach((subject, i) => bus.publish(subject, `s${i}`, '{}'));
    await settle();
    filters.forEach((filter, i) => {
      const expected = subjects.flatMap((subject, k) =>
        subjectMatches(filter, subject) ? [`s${k}`] : [],
      );
      expect(got[`f${i}`], `filter '${filter}'`).toEqual(expected);
    });
  });
});
