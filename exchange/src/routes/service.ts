// GET /healthz (liveness: 200 while the process answers, also while it
// drains), GET /readyz (readiness: this process owns the market with its
// books loaded, the database answers, the event bus is connected, and it is
// not draining; readiness.ts, docs/ownership.md) and GET /v1/openapi.json
// (the document of the API, openapi.ts); none needs a token. The document is
// counted against the public endpoints' limit per client address; the probes
// are not (a load balancer's checks must never be refused).

import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { OPENAPI_PATH } from '../openapi.js';
import type { RouteContext } from '../services.js';
import { Readiness, Ready } from './readiness.js';

const Health = Type.Object({ status: Type.Literal('ok') }, { title: 'Health' });

const Document = Type.Object(
  {},
  { additionalProperties: true, description: 'This OpenAPI 3.1 document.' },
);

export const serviceRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  const readiness = new Readiness(ctx, () => app.draining());
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
        summary:
          'Readiness probe: 200 from the owner of the market while its database and event bus answer; 503 naming what is not',
        tags: ['service'],
        response: { 200: Ready },
      },
    },
    () => readiness.answer(),
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
