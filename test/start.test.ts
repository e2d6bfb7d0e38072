// `npm start` end to end: the built exchange comes up on a free port, serves
// /healthz over real HTTP, and drains to exit code 0 on SIGTERM.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startExchangeProcess } from './support/exchange-process.js';
import type { ExchangeProcess } from './support/exchange-process.js';

let exchange: ExchangeProcess;
let baseUrl: string;
const output = (): string => exchange.output();

beforeAll(async () => {
  // The embedded default (D34): PGlite in a folder of its own.
  exchange = await startExchangeProcess({
    // info: stdout carries log records, which must be all it carries.
    LOG_LEVEL: 'info',
    DATABASE_URL: '',
    GPUX_DATA_DIR: mkdtempSync(join(tmpdir(), 'gpux-start-')),
  });
  baseUrl = exchange.url;
});

afterAll(async () => {
  await exchange?.stop('SIGKILL');
});

describe('exchange process', () => {
  it('prints a URL with the port it bound', () => {
    expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
  });

  it('D34: runs on the embedded database and applies the migrations first', () => {
    expect(output()).toMatch(/database: embedded PGlite in .*pgdata, migrations applied: 1/);
  });

  it('says in its banner what it is connected to: the in-process bus, gRPC without TLS', async () => {
    // The gRPC line follows the URL line.
    await exchange.waitFor(/^agents' gRPC service on port/m);
    expect(output()).toMatch(/^events: the in-process bus/m);
    expect(output()).toMatch(/^agents' gRPC service on port [1-9]\d* of 127\.0\.0\.1, plain text/m);
  });

  it('D34: prints demo tokens that work over HTTP', async () => {
    // The demo lines follow the URL line.
    await exchange.waitFor(/demo buyer token \(acc_\w+\): (gpux_\S+)/);
    const token = /demo buyer token \(acc_\w+\): (gpux_\S+)/.exec(output())?.[1];
    const res = await fetch(`${baseUrl}/v1/account`, {
      headers: { authorization: `Bearer ${token ?? ''}` },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      name: 'demo-buyer',
      organization: 'demo-buyers',
      balance: 0,
    });
  });

  it('keeps stdout for the JSON log records: the banner is on stderr', async () => {
    await exchange.waitFor(/demo buyer token/);
    await fetch(`${baseUrl}/v1/nowhere`);
    const out = exchange
      .stdout()
      .split('\n')
      .filter((l) => l !== '');
    expect(out.length).toBeGreaterThan(0);
    for (const line of out) expect(() => JSON.parse(line) as unknown, line).not.toThrow();
    expect(exchange.stdout()).not.toMatch(/listening on|demo buyer token/);
    expect(exchange.output()).toMatch(/listening on http/);
  });

  it('serves /healthz over HTTP', async () => {
    const res = await fetch(`${baseUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('answers unknown routes with the error envelope', async () => {
    const res = await fetch(`${baseUrl}/v1/missing`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ data: null, error: { code: 'not_found' } });
  });

  it('drains and exits 0 on SIGTERM', async () => {
    // Exit code 0, not a signal (stop() answers null for one).
    expect(await exchange.stop('SIGTERM'), output()).toBe(0);
  });
});
