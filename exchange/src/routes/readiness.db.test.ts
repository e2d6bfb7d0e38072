// GET /readyz (issue 23): ready only when this process owns the market, the
// database answers and the event bus is connected, and not while it drains;
// otherwise 503 `unavailable` naming the failed check in the message and in
// `checks`. GET /healthz stays 200 throughout, the drain included.

import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { buildApp } from '../app.js';
import type { Database, Queryable } from '../db/database.js';
import { openPostgres } from '../db/postgres.js';
import { client, parse } from '../http/testing/raw-http.js';
import { freshPostgres } from '../db/testing/fresh-database.js';
import type { FreshDatabase } from '../db/testing/fresh-database.js';
import { SecretBox } from '../leases/secret-box.js';
import type { Market } from '../market/market.js';

let fresh: FreshDatabase;
let app: FastifyInstance | undefined;
const down: Database[] = [];

beforeAll(async () => {
  fresh = await freshPostgres();
});

afterEach(async () => {
  await app?.close();
  app = undefined;
});

afterAll(async () => {
  for (const d of down) await d.close();
  await fresh?.drop();
});

interface Sources {
  serving?: () => boolean;
  database?: Queryable;
  events?: () => string | undefined;
}

function readyApp(s: Sources = {}): FastifyInstance {
  app = buildApp(
    { logLevel: 'silent' },
    {
      db: fresh.db,
      adminToken: 'readiness-admin-token-0123456789',
      get market(): Market {
        throw new Error('the probes never read the market');
      },
      secrets: new SecretBox(randomBytes(32)),
      serving: s.serving ?? (() => true),
      readiness: { database: s.database ?? fresh.db, events: s.events ?? (() => undefined) },
    },
  );
  return app;
}

const OK_CHECKS = { market: 'ok', database: 'ok', events: 'ok' };

async function readyz(a: FastifyInstance): Promise<{ status: number; body: unknown }> {
  const res = await a.inject({ method: 'GET', url: '/readyz' });
  return { status: res.statusCode, body: res.json() };
}

describe('GET /readyz', () => {
  it('200 from the owner with the database answering and the events connected', async () => {
    expect(await readyz(readyApp())).toEqual({
      status: 200,
      body: { status: 'ready', role: 'owner', phase: 'serving', checks: OK_CHECKS },
    });
  });

  it('503 naming `database` when the database does not answer (a pool that cannot connect)', async () => {
    const unreachable = openPostgres('postgres://postgres@127.0.0.1:1/none', 1);
    down.push(unreachable);
    const res = await readyz(readyApp({ database: unreachable }));
    expect(res).toEqual({
      status: 503,
      body: {
        data: null,
        error: {
          code: 'unavailable',
          message: 'not ready: database: the query failed (ECONNREFUSED)',
          phase: 'serving',
          checks: { ...OK_CHECKS, database: 'the query failed (ECONNREFUSED)' },
        },
      },
    });
    expect((await app?.inject({ method: 'GET', url: '/healthz' }))?.statusCode).toBe(200);
  });

  it('503 naming `events` while the event bus is disconnected, 200 again once it is back', async () => {
    let problem: string | undefined = 'NATS disconnected; reconnecting';
    const a = readyApp({ events: () => problem });
    const res = await readyz(a);
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({
      error: {
        code: 'unavailable',
        message: 'not ready: events: NATS disconnected; reconnecting',
        phase: 'serving',
        checks: { ...OK_CHECKS, events: 'NATS disconnected; reconnecting' },
      },
    });
    problem = undefined;
    expect((await readyz(a)).status).toBe(200);
  });

  it('503 naming `market` on a standby', async () => {
    const res = await readyz(readyApp({ serving: () => false }));
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({
      error: {
        code: 'unavailable',
        phase: 'standby',
        checks: { market: expect.stringMatching(/^standing by: /) as string, database: 'ok' },
      },
    });
    expect((res.body as { error: { message: string } }).error.message).toMatch(
      /^not ready: market: standing by: /,
    );
  });

  it('while draining: /readyz 503 with phase `draining` (still the owner), /healthz 200', async () => {
    const a = readyApp();
    await a.listen({ host: '127.0.0.1', port: 0 });
    const { port } = a.server.address() as AddressInfo;
    const half = (path: string): { write: (t: string) => void; closed: Promise<string> } => {
      const c = client(port, `GET ${path} HTTP/1.1\r\nHost: x\r\n`);
      return { write: (t) => c.socket.write(t), closed: c.closed };
    };
    // Requests whose headers are half sent when the drain starts.
    const ready = half('/readyz');
    const health = half('/healthz');
    // Once another connection has been answered, the half-sent headers have been read.
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);

    const drained = a.drain(30_000);
    app = undefined;
    ready.write('\r\n');
    health.write('\r\n');
    const r = parse(await ready.closed);
    expect(r.status).toBe(503);
    expect(r.body).toEqual({
      data: null,
      error: {
        code: 'unavailable',
        message:
          'not ready: draining: the exchange is shutting down (SIGTERM) and will hand the market over',
        phase: 'draining',
        checks: OK_CHECKS,
      },
    });
    const h = parse(await health.closed);
    expect(h.status).toBe(200);
    expect(h.body).toEqual({ status: 'ok' });
    expect(await drained).toEqual({ forced: false });
  });
});
