import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';

import { buildApp } from '../../app.js';
import { guardSerialization } from './serialization-guard.js';

let app: FastifyInstance | undefined;

afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** A route whose response schema knows `a` (a string) and `n` (an integer) only. */
function appAnswering(view: unknown): { app: FastifyInstance; mismatches: string[] } {
  app = buildApp({ logLevel: 'silent' }, 'offline');
  const { mismatches } = guardSerialization(app);
  app.get(
    '/v1/thing',
    {
      config: { access: 'public' },
      schema: { response: { 200: Type.Object({ a: Type.String(), n: Type.Integer() }) } },
    },
    () => view as { a: string; n: number },
  );
  return { app, mismatches };
}

describe('guardSerialization', () => {
  it('lets through an answer the schema serializes as the view is', async () => {
    const t = appAnswering({ a: 'x', n: 1 });
    const res = await t.app.inject({ method: 'GET', url: '/v1/thing' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ a: 'x', n: 1 });
    expect(t.mismatches).toEqual([]);
  });

  it.each([
    ['a field the schema does not list', { a: 'x', n: 1, extra: true }],
    ['null in a string field (serialized as "")', { a: null, n: 1 }],
    ['a fraction in an integer field (truncated)', { a: 'x', n: 1.5 }],
  ])('turns %s into a 500 naming the route', async (_name, view) => {
    const t = appAnswering(view);
    const res = await t.app.inject({ method: 'GET', url: '/v1/thing' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toMatchObject({ error: { code: 'internal_error' } });
    expect(res.json<{ error: { message: string } }>().error.message).toContain('GET /v1/thing');
    expect(t.mismatches).toHaveLength(1);
  });
});
