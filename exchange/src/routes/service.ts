// GET /healthz (liveness), GET /readyz (readiness: this process owns the
// market and serves, docs/ownership.md) and GET /v1/openapi.json (the
// document of the API, openapi.ts); none needs a token. The document is
// counted against the public endpoints' limit per client address; the probes
// are not (a load balancer's checks must never be refused).

import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { GpuxError } from '@gpux/shared';
import { Type } from '@sinclair/typebox';

import { OPENAPI_PATH } from '../openapi.js';
import type { RouteContext } from '../services.js';

const Health = Type.Object({ status: Type.Literal('ok') }, { title: 'Health' });

const Ready = Type.Object(
  {
    status: Type.Literal('ready'),
    role: Type.Literal('owner', { description: 'This process owns the market and writes it.' }),
  },
  { title: 'Ready' },
);

const Document = Type.Object(
  {},
  { additionalProperties: true, description: 'This OpenAPI 3.1 document.' },
);

export const serviceRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.get(
    '/healthz',
    {
      // Probes come every few seconds: their requests are not logged at info.
      logLevel: 'warn',
      config: { access: 'public' },
      schema: { summary: 'Liveness probe', tags: ['service'], response: { 200: Health } },
    },
    () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      logLevel: 'warn',
      config: { access: 'public', errors: ['unavailable'] },
      schema: {
        summary: 'Readiness probe: 200 from the process that owns the market, 503 from a standby',
        tags: ['service'],
        response: { 200: Ready },
      },
    },
    () => {
      if (ctx.serving !== undefined && !ctx.serving()) {
        throw new GpuxError(
          'unavailable',
          'standing by: another exchange process owns the market (docs/ownership.md)',
        );
      }
      return { status: 'ready' as const, role: 'owner' as const };
    },
  );

  // Built at the first request (the app is ready by then), then kept as text.
  let document: string | undefined;
  app.get(
    OPENAPI_PATH,
    {
      // Counted per client address, as the public endpoints are (http/address-limit.ts).
      config: { access: 'public', rate: 'address' },
      schema: {
        summary: 'The OpenAPI 3.1 document of this API',
        tags: ['service'],
        response: { 200: Document },
      },
    },
    async (_request, reply) => {
      document ??= JSON.stringify(app.swagger());
      return reply.type('application/json; charset=utf-8').send(document);
    },
  );
  done();
};
