// GET /v1/console/events (issue 23, docs/console.md): what keeps the
// console's Fleet and Leases pages live, as server-sent events. Every
// POLL_MS the exchange reads the fleet (GET /v1/admin/fleet's answer) and a
// summary of the leases; whatever changed since the last look is sent:
// `fleet` with the whole fleet, `leases` with the counts per state (the page
// then reads the list it shows). A comment line every HEARTBEAT_MS keeps
// proxies from closing a quiet stream. Any exchange process can serve it:
// it reads only the database. Operators only (the console's cookie or an
// operator token); tag `console`: it is the console's transport, not an
// operator command.

import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';

import { fleetOf } from '../admin/fleet.js';
import type { RouteContext } from '../services.js';
import { ConsoleEventsSchema } from '../views/console.js';
import type { ConsoleLeaseCountsJson } from '../views/console.js';

const POLL_MS = 1_000;
const HEARTBEAT_MS = 15_000;

const LEASE_SUMMARY = `
SELECT count(*) FILTER (WHERE status = 'provisioning')::int AS provisioning,
       count(*) FILTER (WHERE status = 'active')::int AS active,
       count(*) FILTER (WHERE status IN ('terminated', 'expired'))::int AS ended,
       count(*) FILTER (WHERE status = 'failed')::int AS failed,
       COALESCE(max(ended_ms), 0)::text AS last_end
  FROM leases`;

/** The console's streams open; app.ts ends them all when the app closes or drains. */
export class ConsoleStreams {
  readonly open = new Set<() => void>();
  closeAll(): void {
    for (const end of [...this.open]) end();
  }
}

export const consoleEventRoutes: FastifyPluginCallbackTypebox<{
  ctx: RouteContext;
  streams: ConsoleStreams;
}> = (app, { ctx, streams }, done) => {
  const { open } = streams;

  app.get(
    '/v1/console/events',
    {
      exposeHeadRoute: false,
      config: { access: 'admin' },
      schema: {
        summary: 'The console’s live fleet and lease counts (server-sent events)',
        tags: ['console'],
        response: {
          200: {
            description: 'The stream.',
            content: { 'text/event-stream': { schema: ConsoleEventsSchema } },
          },
        },
      },
    },
    (request, reply) => {
      void reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
      });
      res.write('retry: 2000\n\n');
      const sent = new Map<string, string>();
      let closed = false;
      let lastWrite = Date.now();
      const send = (event: string, data: string): void => {
        if (sent.get(event) === data) return;
        sent.set(event, data);
        res.write(`event: ${event}\ndata: ${data}\n\n`);
        lastWrite = Date.now();
      };
      const look = async (): Promise<void> => {
        const now = ctx.market.clock.now();
        const [providers, [leases]] = await Promise.all([
          fleetOf(ctx.db, now),
          ctx.db.query<ConsoleLeaseCountsJson>(LEASE_SUMMARY),
        ]);
        if (closed) return;
        // Ages change every second: the fleet is sent when anything else did,
        // or at least every HEARTBEAT_MS with ages as they are then.
        const fleet = JSON.stringify({ providers });
        const shape = fleet.replace(/"heartbeat_age_seconds":\d+/g, '');
        if (sent.get('fleet-shape') !== shape || Date.now() - lastWrite >= HEARTBEAT_MS) {
          sent.set('fleet-shape', shape);
          send('fleet', JSON.stringify({ at: new Date(now).toISOString(), providers }));
        }
        send('leases', JSON.stringify(leases ?? {}));
        if (Date.now() - lastWrite >= HEARTBEAT_MS) {
          res.write(': keep-alive\n\n');
          lastWrite = Date.now();
        }
      };
      let timer: NodeJS.Timeout | undefined;
      const loop = (): void => {
        look()
          .catch((err: unknown) => request.log.warn({ err }, 'console events: read failed'))
          .finally(() => {
            if (!closed) timer = setTimeout(loop, POLL_MS);
          });
      };
      const end = (): void => {
        closed = true;
        if (timer !== undefined) clearTimeout(timer);
        open.delete(end);
        // The connection goes with the stream: a stream is never followed by
        // another request on it, and a close must not wait for it.
        res.end();
        res.socket?.destroy();
      };
      open.add(end);
      res.once('close', end);
      loop();
    },
  );
  done();
};
