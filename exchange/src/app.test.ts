import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { GpuxError } from '@gpux/shared';
import { BODY_LIMIT_BYTES, buildApp } from './app.js';

let app: FastifyInstance | undefined;

/** Nothing here needs a database: an app built without services (buildApp 'offline'). */
function testApp(): FastifyInstance {
  app = buildApp({ logLevel: 'silent' }, 'offline');
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
    a.post('/echo', { config: { access: 'public' } }, (request) => request.body);
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
        config: { access: 'public' },
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
    a.post('/echo', { config: { access: 'public' } }, (request) => request.body);
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
    a.get('/thin', { config: { access: 'public' } }, () => {
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
    a.get('/boom', { config: { access: 'public' } }, () => {
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
});
