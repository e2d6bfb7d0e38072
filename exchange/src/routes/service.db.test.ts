// The probes answer without filling the log: /healthz and /readyz requests
// are not logged at info (they come every few seconds), other requests are.

import { Writable } from 'node:stream';

import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { testExchange } from '../market/testing/test-exchange.js';
import type { TestExchange } from '../market/testing/test-exchange.js';

const lines: Record<string, unknown>[] = [];
let ex: TestExchange;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) {
        if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  ex = await testExchange({ requestLogger: pino({ level: 'info' }, sink) });
});

afterAll(async () => {
  await ex?.close();
});

const urlsLogged = (): unknown[] =>
  lines.map((l) => (l['req'] as { url?: string } | undefined)?.url).filter((u) => u !== undefined);

describe('request log', () => {
  it('leaves out the probes, keeps the rest', async () => {
    expect((await ex.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await ex.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    const buyer = await ex.party('buyer');
    const book = await ex.call('GET', '/v1/orderbook?gpu_type=h100&zone=us-west-1', buyer.token);
    expect(book.status).toBe(200);
    await new Promise((r) => setImmediate(r));
    expect(urlsLogged()).toContain('/v1/orderbook?gpu_type=h100&zone=us-west-1');
    expect(urlsLogged()).not.toContain('/healthz');
    expect(urlsLogged()).not.toContain('/readyz');
  });
});
