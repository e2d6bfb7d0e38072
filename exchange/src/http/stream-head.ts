// A stream's response is hijacked from fastify and its head written on the
// raw response: what the route's guards set on the reply (the
// X-RateLimit-* headers, docs/api/accounts.md) would be lost without this.

import type { OutgoingHttpHeaders } from 'node:http';

import type { FastifyReply } from 'fastify';

/** The reply's headers so far, then `own` (the stream's) over them. */
export function streamHead(reply: FastifyReply, own: OutgoingHttpHeaders): OutgoingHttpHeaders {
  const head: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(reply.getHeaders()))
    if (value !== undefined) head[name] = value;
  return { ...head, ...own };
}
