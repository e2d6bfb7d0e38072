import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';

import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GpuxError } from '@gpux/shared';
import { BODY_LIMIT_BYTES, buildApp } from './app.js';
import { Market } from './market/market.js';
import type { Database } from './db/database.js';
import { migratedPglite } from './db/testing/fresh-database.js';

let app: FastifyInstance | undefined;
let db: Database;
let market: Market;

beforeAll(async () => {
  db = await migratedPglite();
  market = await Market.open(db, { tickIntervalMs: 0 });
});

afterAll(async () => {
  await db.close();
});

function testApp(): FastifyInstance {
  app = buildApp({ logLevel: 'silent' }, { db, adminToken: 'test-admin-token-0123456789', market });
  return app;
}

afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('buildApp', () => {
  it('answers GET /healthz', async () => {
    const res = await testApp().inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('answers unknown routes with the not_found envelope', async () => {
    const res = await testApp().inject({ method: 'GET', url: '/v1/nope' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({
      data: null,
      error: { code: 'not_found', message: 'no route for GET /v1/nope' },
    });
  });

  it('rejects bodies over 64 KiB with payload_too_large', async () => {
    const a = testApp();
    a.post('/echo', (request) => request.body);
    const res = await a.inject({
      method: 'POST',
      url: '/echo',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ pad: 'x'.repeat(BODY_LIMIT_BYTES) }),
    });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ data: null, error: { code: 'payload_too_large' } });
  });

  it('maps schema validation failures to invalid_request', async () => {
    const a = testApp();
    a.post(
      '/typed',
      {
        schema: {
          body: { type: 'object', required: ['n'], properties: { n: { type: 'integer' } } },
        },
      },
      () => ({ ok: true }),
    );
    const res = await a.inject({ method: 'POST', url: '/typed', payload: { n: 'x' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ data: null, error: { code: 'invalid_request' } });
  });

  it('maps malformed JSON to invalid_request', async () => {
    const a = testApp();
    a.post('/echo', (request) => request.body);
    const res = await a.inject({
      method: 'POST',
      url: '/echo',
      headers: { 'content-type': 'application/json' },
      payload: '{"a":',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: { code: 'invalid_request' } });
  });

  it('passes catalogue errors through with their details', async () => {
    const a = testApp();
    a.get('/thin', () => {
      throw new GpuxError('insufficient_liquidity', 'not enough GPUs', {
        details: { missing_gpus: 8 },
      });
    });
    const res = await a.inject({ method: 'GET', url: '/thin' });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({
      data: null,
      error: { code: 'insufficient_liquidity', message: 'not enough GPUs', missing_gpus: 8 },
    });
  });

  it('hides unexpected errors behind internal_error', async () => {
    const a = testApp();
    a.get('/boom', () => {
      throw new Error('secret detail at /srv/db.ts:42');
    });
    const res = await a.inject({ method: 'GET', url: '/boom' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({
      data: null,
      error: { code: 'internal_error', message: 'internal server error' },
    });
    expect(res.body).not.toMatch(/secret|stack|db\.ts/);
  });

  it('answers malformed HTTP and oversized headers with the invalid_request envelope, never a bare error', async () => {
    const a = testApp();
    await a.listen({ host: '127.0.0.1', port: 0 });
    const { port } = a.server.address() as AddressInfo;
    const raw = (text: string): Promise<string> =>
      new Promise((resolve, reject) => {
        let got = '';
        const sock = connect(port, '127.0.0.1', () => sock.write(text));
        sock.on('data', (d: Buffer) => (got += d.toString('utf8')));
        sock.on('close', () => resolve(got));
        sock.on('error', reject);
      });
    for (const text of [
      'NOT HTTP AT ALL\r\n\r\n',
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    ]) {
      const answer = await raw(text);
      expect(answer.startsWith('HTTP/1.1 400 ')).toBe(true);
      const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as unknown;
      expect(body).toMatchObject({ data: null, error: { code: 'invalid_request' } });
    }
  });
});
