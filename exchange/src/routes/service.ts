// GET /healthz (a load balancer's probe) and GET /v1/openapi.json (the
// document of the API, openapi.ts); neither needs a token.

import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { OPENAPI_PATH } from '../openapi.js';

const Health = Type.Object({ status: Type.Literal('ok') }, { title: 'Health' });

const Document = Type.Object(
  {},
  { additionalProperties: true, description: 'This OpenAPI 3.1 document.' },
);

export const serviceRoutes: FastifyPluginCallbackTypebox = (app, _options, done) => {
  app.get(
    '/healthz',
    {
      config: { access: 'public' },
      schema: { summary: 'Liveness probe', tags: ['service'], response: { 200: Health } },
    },
    () => ({ status: 'ok' as const }),
  );

  // Built at the first request (the app is ready by then), then kept as text.
  let document: string | undefined;
  app.get(
    OPENAPI_PATH,
    {
      config: { access: 'public' },
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
