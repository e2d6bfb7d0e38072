// A failed heartbeat says which step failed (issue 23: the agent's /readyz
// tells the exchange's silence from its own cluster's): reading the nodes'
// health from the provisioner, or the call to the exchange.

import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';

import { ExchangeError } from './exchange/exchange-client.js';
import { Heartbeat } from './heartbeat.js';
import { SILENT_LOGGER } from './logger.js';
import type { Provisioner } from './provisioner/provisioner.js';
import { FakeExchange } from './testing/fake-exchange.js';

const CLUSTER = 'cls_01jdq3m5x0aaaaaaaaaaaaaaaa';

const beats: Heartbeat[] = [];
afterEach(async () => {
  for (const b of beats.splice(0)) await b.stop();
});

/** One heartbeat round (the first runs at start); its result. */
async function oneBeat(health: Provisioner['health'], exchange: FakeExchange) {
  const provisioner = { setClusterNodes: () => undefined, health } as unknown as Provisioner;
  const hb = new Heartbeat({
    clusterId: CLUSTER,
    exchange,
    provisioner,
    intervalMs: 3_600_000,
    seller: undefined,
    logger: SILENT_LOGGER,
  });
  beats.push(hb);
  hb.start();
  while (hb.last === undefined) await new Promise((r) => setImmediate(r));
  return hb.last;
}

describe('a failed heartbeat', () => {
  it('names the provisioner when the nodes could not be read, and sends nothing', async () => {
    const exchange = new FakeExchange(CLUSTER, ['node-a']);
    const last = await oneBeat(() => Promise.reject(new Error('the API server is away')), exchange);
    expect(last).toMatchObject({
      ok: false,
      failed: 'provisioner',
      error: 'the API server is away',
    });
    expect(exchange.of('heartbeat')).toEqual([]);
  });

  it('names the exchange when the call was not answered', async () => {
    const exchange = new FakeExchange(CLUSTER, ['node-a']);
    exchange.failing.set('heartbeat', new ExchangeError('Heartbeat', status.UNAVAILABLE, 'down'));
    const last = await oneBeat(() => Promise.resolve([]), exchange);
    expect(last).toMatchObject({ ok: false, failed: 'exchange' });
    expect(last?.error).toContain('UNAVAILABLE');
  });

  it('is ok when both answered', async () => {
    const last = await oneBeat(() => Promise.resolve([]), new FakeExchange(CLUSTER, ['node-a']));
    expect(last).toMatchObject({ ok: true });
    expect(last?.failed).toBeUndefined();
  });
});
