// GET /v1/stream (issue 22, docs/api/market-data.md): the live feed of one
// book as server-sent events, for anyone (no token). Counted per client
// address: against the public endpoints' request limit
// (http/address-limit.ts), and at most a number of streams open at once
// (feed/streams.ts). Served by the process that owns the market; a standby
// answers 503 with Retry-After, like every route that needs the market, and
// the client reconnects (through a load balancer, to the owner).

import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { GPU_TYPES, GpuxError, ZONES } from '@gpux/shared';
import { Type } from '@sinclair/typebox';
import type { ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';

import type { BookFeed } from '../feed/book-feed.js';
import { SocketSink } from '../feed/socket-sink.js';
import type { Watcher } from '../feed/watcher.js';
import type { FeedWriter } from '../feed/writer.js';
import { StringEnum } from '../http/schema.js';
import type { RouteContext } from '../services.js';
import { FeedStreamSchema } from '../views/feed.js';
import type { CloseReason } from '../views/feed.js';
import { streamHead } from '../http/stream-head.js';

const StreamQuery = Type.Object(
  { gpu_type: StringEnum(GPU_TYPES), zone: StringEnum(ZONES) },
  { additionalProperties: false },
);

const StreamHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,15}$',
      description:
        'The `id` of the last event received (a sequence number): the stream resumes after it when the exchange still holds every update since, else starts with a snapshot.',
    }),
  ),
});

/** A client refused for having its share of streams open may try again after this long (s). */
const STREAMS_RETRY_AFTER_S = 5;

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  // nginx and its kind would otherwise hold the events back.
  'x-accel-buffering': 'no',
  // Public data: a page of any origin may follow it (no credentials are taken).
  'access-control-allow-origin': '*',
};

export const streamRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.get(
    '/v1/stream',
    {
      // A HEAD would hold a stream open with no body to write it to.
      exposeHeadRoute: false,
      config: { access: 'public', rate: 'address', errors: ['unavailable'] },
      schema: {
        summary: 'The live feed of one book (server-sent events)',
        description:
          'A snapshot of every level of the book with its sequence number, then each change as it is committed: levels (absolute GPUs and orders at a price; 0 GPUs removes it) and trades, each numbered one more than the last, and a heartbeat every few seconds. ' +
          'Resume with Last-Event-ID. Too many streams open from one address is rate_limited. docs/api/market-data.md has the events and how to keep a copy of the book.',
        tags: ['market'],
        querystring: StreamQuery,
        headers: StreamHeaders,
        response: {
          200: {
            description: 'The stream.',
            content: { 'text/event-stream': { schema: FeedStreamSchema } },
          },
        },
      },
    },
    (request, reply) => {
      const q = request.query;
      const header = request.headers['last-event-id'];
      const lastEventId = typeof header === 'string' ? Number(header) : undefined;
      // 503 on a process that does not own the market.
      const feed = ctx.market.writer(q.gpu_type, q.zone).feed;
      if (feed.closed) {
        throw new GpuxError('unavailable', 'this exchange process no longer serves the market');
      }
      const address = request.ip;
      if (!ctx.streams.admit(address)) {
        void reply.header('Retry-After', STREAMS_RETRY_AFTER_S);
        throw new GpuxError(
          'rate_limited',
          `at most ${ctx.streams.perAddress} streams may be open at once from one address; close one first`,
        );
      }
      // From here on the response is the stream's, written by the feed.
      void reply.hijack();
      const res = reply.raw;
      if (res.socket === null) {
        // The client left before its answer.
        ctx.streams.release(address);
        return;
      }
      // What the guards set (X-RateLimit-*, docs/api/accounts.md) goes out with the stream's head.
      res.writeHead(200, streamHead(reply, SSE_HEADERS));
      const socket = res.socket;
      const writer = ctx.feedWriter;
      if (writer !== undefined && !writer.closed && canHandOver(socket)) {
        handOver(ctx, writer, feed, { res, socket, address, lastEventId });
        return;
      }
      let stream: Watcher | undefined;
      const w = feed.watch(SocketSink.ofResponse(res), lastEventId, () =>
        ctx.streams.release(address, stream),
      );
      if (!w.closed) {
        stream = w;
        ctx.streams.track(w);
        res.once('close', () => w.left());
      }
    },
  );
  done();
};

/** A plain TCP connection (not TLS, not an injected request): one the writer process can be given. */
function canHandOver(socket: unknown): socket is Socket {
  return (
    socket instanceof Socket &&
    !(socket instanceof TLSSocket) &&
    (socket as Socket & { _handle: unknown })._handle != null
  );
}

/**
 * The stream's head (its snapshot, or the events it missed) is written here;
 * once it has reached the socket, the socket goes to the feed writer process,
 * which writes the rest (feed/writer.ts).
 */
function handOver(
  ctx: RouteContext,
  writer: FeedWriter,
  feed: BookFeed,
  s: { res: ServerResponse; socket: Socket; address: string; lastEventId: number | undefined },
): void {
  const start = feed.handOver(s.lastEventId, writer);
  let stream: { close(reason: CloseReason): void } | undefined;
  let handed = false;
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    start.end();
    ctx.streams.release(s.address, stream);
  };
  // Until it is handed over, the client leaving ends it here.
  s.res.once('close', () => {
    if (!handed) end();
  });
  s.res.write(start.head, (err) => {
    if (err != null || s.socket.destroyed || ended) {
      end();
      return;
    }
    handed = true;
    const chunked = (s.res as ServerResponse & { chunkedEncoding: boolean }).chunkedEncoding;
    const id = writer.handOver(s.socket, { ...start.watch, chunked }, end);
    if (!ended) {
      stream = { close: (reason) => writer.closeOne(id, reason) };
      ctx.streams.track(stream);
    }
  });
}
