// GET /v1/account/stream (issue 22, docs/api/account-events.md): the
// caller's account's own events as server-sent events, from
// account-events/account-streams.ts. Only the token's account: there is no
// parameter naming another.

import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { GpuxError } from '@gpux/shared';
import { Type } from '@sinclair/typebox';

import { STREAMS_PER_ACCOUNT } from '../account-events/account-streams.js';
import { callerOf } from '../auth/authenticate.js';
import type { RouteContext } from '../services.js';
import { AccountStreamSchema } from '../views/account-events.js';
import { streamHead } from '../http/stream-head.js';

const StreamHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,15}$',
      description:
        'The `id` of the last event received: the stream sends the account’s events after it. Without it, the stream starts after the account’s last event.',
    }),
  ),
});

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
};

export const accountStreamRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.get(
    '/v1/account/stream',
    {
      exposeHeadRoute: false,
      config: {
        access: 'customer',
        scope: 'read',
        rate: 'query',
        errors: ['invalid_request', 'rate_limited'],
      },
      schema: {
        summary: 'The account’s own events (server-sent events)',
        description:
          'Orders filled, partly filled and cancelled; leases provisioning, active, failed, terminated, expired, sold and their kubeconfigs refreshed; ledger transactions posted: each with the account’s next event number as its `id:`. Resume with Last-Event-ID; without it the stream starts after the last event. ' +
          `At most ${STREAMS_PER_ACCOUNT} streams of one account at once (one more is rate_limited). docs/api/account-events.md has the events and their data.`,
        tags: ['account'],
        headers: StreamHeaders,
        response: {
          200: {
            description: 'The stream.',
            content: { 'text/event-stream': { schema: AccountStreamSchema } },
          },
        },
      },
    },
    async (request, reply) => {
      const accountId = callerOf(request).accountId;
      const header = request.headers['last-event-id'];
      const after = typeof header === 'string' ? Number(header) : undefined;
      const res = reply.raw;
      // The stream's first bytes are written by start() once it is admitted: the
      // response is the stream's from then on.
      const opened = await ctx.accountStreams.start(accountId, after, {
        write: (chunk) => {
          if (!res.headersSent) {
            void reply.hijack();
            // What the guards set (X-RateLimit-*, docs/api/accounts.md) goes out with the stream's head.
            res.writeHead(200, streamHead(reply, SSE_HEADERS));
          }
          return res.write(chunk);
        },
        end: () => res.end(),
        destroy: () => res.destroy(),
        once: (event, listener) => res.once(event, listener),
        get writableLength() {
          return res.writableLength;
        },
        get writableEnded() {
          return res.writableEnded;
        },
        get destroyed() {
          return res.destroyed;
        },
      });
      if (opened.ok) return reply;
      if (opened.code === 'too_many') {
        void reply.header('Retry-After', 5);
        throw new GpuxError(
          'rate_limited',
          `at most ${STREAMS_PER_ACCOUNT} streams of one account may be open at once; close one first`,
        );
      }
      throw new GpuxError(
        'invalid_request',
        `Last-Event-ID ${after ?? ''} is past the account’s last event, ${opened.head}`,
      );
    },
  );
  done();
};
