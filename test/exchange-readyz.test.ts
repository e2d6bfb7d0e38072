// The exchange's GET /readyz end to end (issue 23): a real exchange process
// on PostgreSQL and a private NATS JetStream server. 200 with every check
// `ok` while it owns the market; 503 naming `events` while NATS is away, 200
// again once it is back; 503 with phase `draining` from SIGTERM on, while the
// process still owns the market; /healthz 200 throughout.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createDatabase, uniqueDatabaseName } from '../exchange/src/db/testing/admin-database.js';
import type { ScratchDatabase } from '../exchange/src/db/testing/admin-database.js';
import { client, parse } from '../exchange/src/http/testing/raw-http.js';
import { startExchangeProcess } from './support/exchange-process.js';
import type { ExchangeProcess } from './support/exchange-process.js';
import { PrivateNats } from './support/nats-server.js';
import { untilWith } from './support/until.js';

const scratch = mkdtempSync(join(tmpdir(), 'gpux-readyz-'));
let nats: PrivateNats | undefined;
let database: ScratchDatabase | undefined;
let exchange: ExchangeProcess | undefined;

const until = untilWith({ output: () => exchange?.output() ?? '' });

beforeAll(async () => {
  nats = await PrivateNats.start();
  database = await createDatabase(uniqueDatabaseName('gpux_readyz'));
});

afterAll(async () => {
  await exchange?.stop('SIGKILL');
  await nats?.stop();
  await database?.drop();
  rmSync(scratch, { recursive: true, force: true });
});

interface Probe {
  readonly status: number;
  readonly body: { error?: { message?: string; phase?: string; checks?: Record<string, string> } };
}

async function probe(path: string): Promise<Probe> {
  const res = await fetch(`${exchange?.url ?? ''}${path}`);
  return { status: res.status, body: (await res.json()) as Probe['body'] };
}

/** A request whose headers are half sent; `finish` sends the rest and resolves with the answer. */
function halfSent(url: string, path: string): () => Promise<ReturnType<typeof parse>> {
  const { hostname, port } = new URL(url);
  const c = client(Number(port), `GET ${path} HTTP/1.1\r\nHost: x\r\n`, hostname);
  return async () => {
    c.socket.write('\r\n');
    return parse(await c.closed);
  };
}

const OK_CHECKS = { market: 'ok', database: 'ok', events: 'ok' };

describe('the exchange /readyz on PostgreSQL and NATS', () => {
  it('200 when serving, 503 naming events while NATS is away, 503 draining from SIGTERM on; /healthz 200 throughout', async () => {
    const n = nats as PrivateNats;
    exchange = await startExchangeProcess({
      DATABASE_URL: database?.url ?? '',
      NATS_URL: n.url,
      GPUX_DATA_DIR: join(scratch, 'data'),
      GPUX_SECRET_KEY: randomBytes(32).toString('base64'),
      GPUX_DRAIN_TIMEOUT_SECONDS: '30',
      LOG_LEVEL: 'info',
    });
    const ex = exchange;
    expect(await probe('/readyz')).toEqual({
      status: 200,
      body: { status: 'ready', role: 'owner', phase: 'serving', checks: OK_CHECKS },
    });

    // NATS goes away: not ready, naming the event bus; alive all the same.
    await n.stop();
    const away = await until('/readyz to name the event bus', async () => {
      const p = await probe('/readyz');
      return p.status === 503 ? p : undefined;
    });
    expect(away.body.error).toEqual({
      code: 'unavailable',
      message: 'not ready: events: NATS disconnected; reconnecting',
      phase: 'serving',
      checks: { ...OK_CHECKS, events: 'NATS disconnected; reconnecting' },
    });
    expect((await probe('/healthz')).status).toBe(200);

    // Back: ready again.
    await n.resume();
    await until('/readyz 200 again', async () => (await probe('/readyz')).status === 200);

    // SIGTERM: the probes that arrive during the drain, on connections already open.
    const ready = halfSent(ex.url, '/readyz');
    const health = halfSent(ex.url, '/healthz');
    // Once another connection has been answered, the exchange has read both.
    expect((await probe('/healthz')).status).toBe(200);
    const exited = ex.stop('SIGTERM');
    await ex.waitFor(/SIGTERM received, draining/);
    const r = await ready();
    expect(r.status).toBe(503);
    // Still the owner: the market is let go only after the drain.
    expect(r.body).toMatchObject({
      error: { code: 'unavailable', phase: 'draining', checks: OK_CHECKS },
    });
    expect((r.body as { error: { message: string } }).error.message).toMatch(
      /^not ready: draining: /,
    );
    const h = await health();
    expect(h.status).toBe(200);
    expect(h.body).toEqual({ status: 'ok' });
    expect(await exited).toBe(0);
  });
});
