// D34 end to end: SIGTERM drains the built exchange. A request arriving on
// an open connection during the drain is answered 503 `unavailable` in the
// D19 envelope with Connection: close (the probes answer as themselves:
// test/exchange-readyz.test.ts); a client that holds a half-sent
// request does not keep the exchange alive: at GPUX_DRAIN_TIMEOUT_SECONDS its
// connection is closed and the exchange exits 0.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { client } from '../exchange/src/http/testing/raw-http.js';
import { startExchangeProcess } from './support/exchange-process.js';
import type { ExchangeProcess } from './support/exchange-process.js';

const ADMIN_TOKEN = 'drain-test-admin-token-0123456789';

let exchange: ExchangeProcess;
let url: string;

beforeAll(async () => {
  exchange = await startExchangeProcess({
    DATABASE_URL: '',
    GPUX_DATA_DIR: mkdtempSync(join(tmpdir(), 'gpux-drain-')),
    GPUX_DRAIN_TIMEOUT_SECONDS: '2',
    LOG_LEVEL: 'info',
    GPUX_ADMIN_TOKEN: ADMIN_TOKEN,
  });
  url = exchange.url;
});

afterAll(async () => {
  await exchange?.stop('SIGKILL');
});

/** A raw connection to the exchange (exchange/src/http/testing/raw-http.ts). */
function open(url: string, send: string): ReturnType<typeof client> {
  const { hostname, port } = new URL(url);
  return client(Number(port), send, hostname);
}

describe('D34: SIGTERM drains the exchange', () => {
  it('is ready on the embedded database and the in-process bus (issue 23)', async () => {
    const res = await fetch(`${url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      status: 'ready',
      role: 'owner',
      phase: 'serving',
      checks: { market: 'ok', database: 'ok', events: 'ok' },
    });
  });

  it('answers 503 unavailable to a request arriving meanwhile, closes a half-sent request at the deadline, and exits 0', async () => {
    // Headers complete, body half sent: a request the exchange is waiting on.
    // Authenticated: a stranger's request is answered 401 before its body is
    // read (docs/api/errors.md), so nothing would wait on it.
    const held = open(
      url,
      'POST /v1/admin/accounts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        `Authorization: Bearer ${ADMIN_TOKEN}\r\n` +
        'Content-Length: 100\r\n\r\n{"name":',
    );
    // Headers half sent: a request that will arrive during the drain.
    const late = open(url, 'GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\n');
    // Once another connection has been answered, the exchange has read both.
    expect((await fetch(`${url}/healthz`)).status).toBe(200);

    const exited = exchange.stop('SIGTERM');
    await exchange.waitFor(/SIGTERM received, draining/);
    late.socket.write('\r\n');
    const answer = await late.closed;
    expect(answer).toMatch(/^HTTP\/1\.1 503 /);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({
      data: null,
      error: { code: 'unavailable' },
    });

    // The client never finishes its body: the exchange closes the connection itself.
    expect(await held.closed).toBe('');
    // Exit code 0, not a signal (stop() answers null for one).
    expect(await exited, exchange.output()).toBe(0);
    expect(exchange.output()).toMatch(/drain deadline passed/);
  });
});
