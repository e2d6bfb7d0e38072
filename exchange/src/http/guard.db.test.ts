// Authentication is answered before the body is read (docs/api/errors.md,
// http/guard.ts), over a real socket: a stranger's request gets 401 while
// its body is still arriving, so neither the body limit (413) nor the JSON
// parser (400) nor the schema (400) answers a request nobody authenticated.

import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BODY_LIMIT_BYTES } from './errors.js';
import { testExchange } from '../market/testing/test-exchange.js';
import type { Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;
let buyer: Party;
let reader: Party;
let port: number;

beforeAll(async () => {
  ex = await testExchange();
  buyer = await ex.account('buyer');
  reader = await ex.account('reader', { scopes: ['read'] });
  await ex.app.listen({ host: '127.0.0.1', port: 0 });
  port = (ex.app.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await ex?.close();
});

interface Answer {
  readonly status: number;
  readonly code: unknown;
}

/**
 * Sends the head of a POST announcing `length` bytes of body, then `sent`
 * of them, and reads the answer without sending the rest.
 */
function post(url: string, token: string | null, length: number, sent: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let got = '';
    const sock = connect(port, '127.0.0.1', () => {
      sock.write(
        `POST ${url} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${length}\r\n` +
          (token === null ? '' : `Authorization: Bearer ${token}\r\n`) +
          '\r\n' +
          sent,
      );
    });
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no answer while the body was incomplete: ${got.slice(0, 200)}`));
    }, 5_000);
    sock.on('data', (d: Buffer) => {
      got += d.toString('utf8');
      const head = got.indexOf('\r\n\r\n');
      const m = /content-length: (\d+)/i.exec(got);
      if (head < 0 || m === null || Buffer.byteLength(got.slice(head + 4)) < Number(m[1])) return;
      clearTimeout(timer);
      sock.destroy();
      const body = JSON.parse(got.slice(head + 4)) as { error?: { code?: unknown } };
      resolve({ status: Number(got.split(' ')[1]), code: body.error?.code });
    });
    sock.on('error', reject);
  });
}

const BIG = 70 * 1024;

describe('authentication before the body (docs/api/errors.md)', () => {
  it('a 70 KB POST without a token is 401 before its body has arrived, not 413', async () => {
    expect(BIG).toBeGreaterThan(BODY_LIMIT_BYTES);
    // 1 KB of the announced 70 KB: a server that read the body first would wait.
    const start = '{"side":"buy",'.padEnd(1024, ' ');
    expect(await post('/v1/orders', null, BIG, start)).toEqual({
      status: 401,
      code: 'unauthorized',
    });
    // Within the limit, too: nothing waits for a stranger's body.
    expect(await post('/v1/orders', null, 10 * 1024, start)).toEqual({
      status: 401,
      code: 'unauthorized',
    });
  });

  it('the whole 70 KB without a token is 401; with a valid token it is 413 payload_too_large', async () => {
    const body = `{"pad":"${'x'.repeat(BIG - 10)}"}`;
    expect(await post('/v1/orders', null, Buffer.byteLength(body), body)).toEqual({
      status: 401,
      code: 'unauthorized',
    });
    expect(await post('/v1/orders', buyer.token, Buffer.byteLength(body), body)).toEqual({
      status: 413,
      code: 'payload_too_large',
    });
  });

  it('malformed JSON is 401 without a token, 403 with a token lacking the scope, 400 with the scope', async () => {
    expect(await post('/v1/orders', null, 1, '{')).toEqual({ status: 401, code: 'unauthorized' });
    expect(await post('/v1/orders', 'gpux_unknown', 1, '{')).toEqual({
      status: 401,
      code: 'unauthorized',
    });
    expect(await post('/v1/orders', reader.token, 1, '{')).toEqual({
      status: 403,
      code: 'forbidden',
    });
    expect(await post('/v1/orders', buyer.token, 1, '{')).toEqual({
      status: 400,
      code: 'invalid_request',
    });
  });

  it('the admin API too: a 600 KB cluster without the admin token is 401 at once, not 413', async () => {
    expect(await post('/v1/admin/clusters', null, 600 * 1024, '{')).toEqual({
      status: 401,
      code: 'unauthorized',
    });
    expect(await post('/v1/admin/clusters', buyer.token, 600 * 1024, '{')).toEqual({
      status: 403,
      code: 'forbidden',
    });
  });
});
