// The agent keeps within the exchange's limits by itself (issue 18): it
// waits what a RESOURCE_EXHAUSTED's retry-after-ms says before the next call
// of that kind, spaces its heartbeats half an interval apart, bounds its
// calls in flight, and never sends a request refused as is again. The clock
// is the test's: sleeping moves it, so every wait is seen exactly.

import { status } from '@grpc/grpc-js';
import type { ReportProvisionedRequest } from '@gpux/proto';
import { describe, expect, it, vi } from 'vitest';

import { FakeExchange } from '../testing/fake-exchange.js';
import { ExchangeError } from './exchange-client.js';
import { HEARTBEAT_GAP, PacedExchange } from './paced-exchange.js';

const CLUSTER = 'cls_01jdq3m5x0aaaaaaaaaaaaaaaa';
const INTERVAL = 5_000;
const GAP = INTERVAL * HEARTBEAT_GAP;

function setUp(maxWaitMs = 10_000, maxInFlight?: number) {
  const fake = new FakeExchange(CLUSTER, ['node-a']);
  const clock = { now: 1_000_000 };
  const sent: { method: string; atMs: number }[] = [];
  const inner = new Proxy(fake, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function' || prop === 'of' || prop === 'close') return v;
      return (...args: unknown[]) => {
        sent.push({ method: String(prop), atMs: clock.now });
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const slept: number[] = [];
  const paced = new PacedExchange(inner, {
    heartbeatIntervalMs: INTERVAL,
    maxWaitMs,
    ...(maxInFlight === undefined ? {} : { maxInFlight }),
    now: () => clock.now,
    sleep: (ms) => {
      slept.push(ms);
      clock.now += ms;
      return Promise.resolve();
    },
  });
  return { fake, clock, sent, slept, paced };
}

const limited = (method: string, retryAfterMs: number) =>
  new ExchangeError(method, status.RESOURCE_EXHAUSTED, 'over the limit', { retryAfterMs });
const invalid = (method: string, message: string) =>
  new ExchangeError(method, status.INVALID_ARGUMENT, message);
const heartbeat = { clusterId: CLUSTER, nodes: [] };
const report = (leaseId: string): ReportProvisionedRequest => ({
  clusterId: CLUSTER,
  leaseId,
  sshEndpoints: [],
  sshHostKeys: [],
  kubeconfig: '',
});

describe('PacedExchange: retry-after-ms', () => {
  it('the next call of the same kind waits at least the time the exchange asked for', async () => {
    const { fake, clock, sent, paced } = setUp();
    fake.failing.set('reportRevoked', limited('ReportRevoked', 3_000));
    const refusedAt = clock.now;
    await expect(paced.reportRevoked(CLUSTER, 'lse_1')).rejects.toMatchObject({
      code: status.RESOURCE_EXHAUSTED,
      retryAfterMs: 3_000,
    });
    expect(paced.status().backoff).toEqual([{ kind: 'reports', untilMs: refusedAt + 3_000 }]);
    fake.failing.delete('reportRevoked');

    // Another report (same kind) waits; a heartbeat (another kind) does not.
    await paced.heartbeat(heartbeat);
    expect(sent.at(-1)).toEqual({ method: 'heartbeat', atMs: refusedAt });
    await paced.reportProvisioned(report('lse_2'));
    expect(sent.at(-1)).toEqual({ method: 'reportProvisioned', atMs: refusedAt + 3_000 });
    expect(paced.status().backoff).toEqual([]);
  });

  it('a wait longer than the call deadline is not slept through: the call fails unsent', async () => {
    const { fake, sent, paced } = setUp(10_000);
    fake.failing.set('publishSell', limited('PublishSell', 60_000));
    const sell = { clusterId: CLUSTER, nodes: 1, priceCents: 250, windowHours: 168 };
    await expect(paced.publishSell(sell)).rejects.toMatchObject({ retryAfterMs: 60_000 });
    fake.failing.delete('publishSell');
    const before = sent.length;
    const err: unknown = await paced.publishSell(sell).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: status.RESOURCE_EXHAUSTED, method: 'PublishSell' });
    expect((err as ExchangeError).retryAfterMs).toBe(60_000);
    expect(sent.length).toBe(before);
    // WithdrawSell is a sell change too: held back the same way.
    await expect(paced.withdrawSell(CLUSTER, 'ord_1')).rejects.toMatchObject({
      code: status.RESOURCE_EXHAUSTED,
    });
    expect(sent.length).toBe(before);
  });

  it('a retry-after beyond ten minutes is taken as ten minutes', async () => {
    const { fake, clock, paced } = setUp();
    fake.failing.set('listLeases', limited('ListLeases', 86_400_000));
    await paced.listLeases(CLUSTER).catch(() => undefined);
    expect(paced.status().backoff).toEqual([{ kind: 'reads', untilMs: clock.now + 600_000 }]);
  });
});

describe('PacedExchange: heartbeats', () => {
  it('leave more than half the declared interval apart (HEARTBEAT_GAP)', async () => {
    const { sent, slept, paced } = setUp();
    await paced.heartbeat(heartbeat);
    await paced.heartbeat(heartbeat);
    await paced.heartbeat(heartbeat);
    const at = sent.filter((s) => s.method === 'heartbeat').map((s) => s.atMs);
    expect(at[1]! - at[0]!).toBe(GAP);
    expect(at[2]! - at[1]!).toBe(GAP);
    expect(slept).toEqual([GAP, GAP]);
  });

  it('two heartbeats asked for at once leave one after the other', async () => {
    // Real waiting on fake timers: the second sleeps while the first is sent.
    vi.useFakeTimers({ now: 0 });
    try {
      const fake = new FakeExchange(CLUSTER, ['node-a']);
      const at: number[] = [];
      const inner = Object.assign(Object.create(fake) as FakeExchange, {
        heartbeat: (req: typeof heartbeat) => {
          at.push(Date.now());
          return fake.heartbeat(req);
        },
      });
      const paced = new PacedExchange(inner, { heartbeatIntervalMs: INTERVAL, maxWaitMs: 10_000 });
      const both = Promise.all([paced.heartbeat(heartbeat), paced.heartbeat(heartbeat)]);
      await vi.advanceTimersByTimeAsync(INTERVAL);
      await both;
      expect(at).toEqual([0, GAP]);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('PacedExchange: calls in flight', () => {
  it('at most maxInFlight at once; the others wait their turn', async () => {
    const fake = new FakeExchange(CLUSTER, ['node-a']);
    let now = 0;
    let most = 0;
    const releases: (() => void)[] = [];
    const inner = Object.assign(Object.create(fake) as FakeExchange, {
      listLeases: async (clusterId: string) => {
        now++;
        most = Math.max(most, now);
        await new Promise<void>((r) => releases.push(r));
        now--;
        return fake.listLeases(clusterId);
      },
    });
    const paced = new PacedExchange(inner, {
      heartbeatIntervalMs: INTERVAL,
      maxWaitMs: 10_000,
      maxInFlight: 2,
    });
    const calls = Array.from({ length: 5 }, () => paced.listLeases(CLUSTER));
    for (let done = 0; done < 5;) {
      await new Promise((r) => setImmediate(r));
      const r = releases.shift();
      if (r !== undefined) {
        r();
        done++;
      }
    }
    await Promise.all(calls);
    expect(most).toBe(2);
    expect(fake.of('listLeases')).toHaveLength(5);
  });
});

describe('PacedExchange: a request refused as is', () => {
  it('is never sent again unchanged; answered from memory, marked repeated; another request goes', async () => {
    const { fake, sent, paced } = setUp();
    fake.failing.set(
      'reportProvisioned',
      invalid('ReportProvisioned', 'kubeconfig is over 64 KiB'),
    );
    const first: unknown = await paced.reportProvisioned(report('lse_1')).catch((e: unknown) => e);
    expect(first).toMatchObject({ code: status.INVALID_ARGUMENT, repeated: false });
    const again: unknown = await paced.reportProvisioned(report('lse_1')).catch((e: unknown) => e);
    expect(again).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: 'kubeconfig is over 64 KiB',
      repeated: true,
    });
    expect(fake.of('reportProvisioned')).toHaveLength(1);

    // Even once the exchange would take it: that request is not sent again.
    fake.failing.delete('reportProvisioned');
    await expect(paced.reportProvisioned(report('lse_1'))).rejects.toMatchObject({
      repeated: true,
    });
    // Another request of the same method is sent.
    await paced.reportProvisioned(report('lse_2'));
    expect(fake.of('reportProvisioned')).toHaveLength(2);
    expect(sent.filter((s) => s.method === 'reportProvisioned')).toHaveLength(2);

    expect(paced.status().refused).toEqual([
      expect.objectContaining({
        method: 'ReportProvisioned',
        code: 'INVALID_ARGUMENT',
        message: 'kubeconfig is over 64 KiB',
        times: 3,
      }),
    ]);
  });

  it('the same refusal of a changed request (fresh heartbeat state) is sent, but marked repeated', async () => {
    const { fake, paced } = setUp();
    fake.failing.set('heartbeat', invalid('Heartbeat', 'nodes[0].gpus: at most 8'));
    const hb = (temperatureC: number) => ({
      clusterId: CLUSTER,
      nodes: [
        {
          hostname: 'node-a',
          healthy: true,
          problem: '',
          gpus: [
            {
              index: 0,
              name: 'H100',
              uuid: 'GPU-0',
              memoryTotalMib: 81559,
              utilizationPercent: 0,
              temperatureC,
            },
          ],
        },
      ],
    });
    await expect(paced.heartbeat(hb(30))).rejects.toMatchObject({ repeated: false });
    await expect(paced.heartbeat(hb(31))).rejects.toMatchObject({ repeated: true });
    expect(fake.of('heartbeat')).toHaveLength(2);
    await expect(paced.heartbeat(hb(31))).rejects.toMatchObject({ repeated: true });
    expect(fake.of('heartbeat')).toHaveLength(2);
  });

  it('a RESOURCE_EXHAUSTED without a wait (a message over the size limit) is refused as is', async () => {
    const { fake, paced } = setUp();
    fake.failing.set(
      'attach',
      new ExchangeError('Attach', status.RESOURCE_EXHAUSTED, 'Received message larger than max'),
    );
    const req = {
      clusterId: CLUSTER,
      heartbeatIntervalSeconds: 5,
      agentVersion: '1',
      provisioner: 'simulated',
      host: undefined,
    };
    await expect(paced.attach(req)).rejects.toMatchObject({ repeated: false });
    await expect(paced.attach(req)).rejects.toMatchObject({ repeated: true });
    expect(fake.of('attach')).toHaveLength(1);
    expect(paced.status().backoff).toEqual([]);
  });

  it('a NOT_FOUND (an id the exchange does not have) is refused as is; a FAILED_PRECONDITION is sent again', async () => {
    const { fake, paced } = setUp();
    fake.failing.set(
      'reportRevoked',
      new ExchangeError('ReportRevoked', status.NOT_FOUND, 'no lease lse_1'),
    );
    await expect(paced.reportRevoked(CLUSTER, 'lse_1')).rejects.toMatchObject({ repeated: false });
    await expect(paced.reportRevoked(CLUSTER, 'lse_1')).rejects.toMatchObject({ repeated: true });
    expect(fake.of('reportRevoked')).toHaveLength(1);
    // The state it met may change: sent again each time, never answered from memory.
    fake.failing.set(
      'reportFailed',
      new ExchangeError('ReportFailed', status.FAILED_PRECONDITION, 'lease_not_active'),
    );
    for (let i = 0; i < 2; i++) {
      await expect(paced.reportFailed(CLUSTER, 'lse_2', 'x')).rejects.toMatchObject({
        code: status.FAILED_PRECONDITION,
        repeated: false,
      });
    }
    expect(fake.of('reportFailed')).toHaveLength(2);
  });
});
