// Once a route declares a response schema, Fastify serializes its answers
// with fast-json-stringify, which silently drops a property the schema does
// not list, writes null as "" in a string field and truncates a fraction in
// an integer one. This guard, for tests, compares every JSON answer with
// what JSON.stringify makes of the object the handler returned (the view);
// where they differ, the answer becomes a 500 that names the route and shows
// both, so the test that made the request fails on the spot.

import { isDeepStrictEqual } from 'node:util';

import type { FastifyInstance, FastifyRequest } from 'fastify';

export interface SerializationGuard {
  /** The requests whose answers differed from their views, in order. */
  readonly mismatches: string[];
}

export function guardSerialization(app: FastifyInstance): SerializationGuard {
  const views = new WeakMap<FastifyRequest, string>();
  const mismatches: string[] = [];
  app.addHook('preSerialization', (request, _reply, payload, done) => {
    views.set(request, JSON.stringify(payload));
    done(null, payload);
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    const view = views.get(request);
    if (view === undefined || typeof payload !== 'string') {
      done(null, payload);
      return;
    }
    if (isDeepStrictEqual(JSON.parse(payload), JSON.parse(view))) {
      done(null, payload);
      return;
    }
    const what = `${request.method} ${request.url} (${reply.statusCode}) sent ${payload} for the view ${view}`;
    mismatches.push(what);
    void reply.code(500);
    done(
      null,
      JSON.stringify({
        data: null,
        error: { code: 'internal_error', message: `serialization changed the answer: ${what}` },
      }),
    );
  });
  return { mismatches };
}
