// `npm start` end to end: the built exchange comes up on a free port, serves
// /healthz over real HTTP, and drains to exit code 0 on SIGTERM.

import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXCHANGE_NODE_FLAGS } from '@gpux/exchange';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const MAIN = fileURLToPath(new URL('../exchange/dist/main.js', import.meta.url));

let child: ChildProcess;
let baseUrl: string;
let output = '';

function waitForUrl(proc: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(output);
      if (m?.[1] !== undefined) resolve(m[1]);
    };
    proc.stdout?.on('data', onData);
    proc.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    proc.once('exit', (code) =>
      reject(new Error(`exchange exited (${code}) before listening:\n${output}`)),
    );
  });
}

/** The demo lines follow the URL line; wait for them. */
async function waitForOutput(pattern: RegExp): Promise<void> {
  for (let i = 0; i < 100 && !pattern.test(output); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  child = spawn(process.execPath, [...EXCHANGE_NODE_FLAGS, MAIN], {
    // The embedded default (D34): PGlite in a folder of its own.
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: '0',
      GRPC_PORT: '0',
      LOG_LEVEL: 'warn',
      DATABASE_URL: '',
      GPUX_DATA_DIR: mkdtempSync(join(tmpdir(), 'gpux-start-')),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  baseUrl = await waitForUrl(child);
});

afterAll(() => {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

describe('exchange process', () => {
  it('prints a URL with the port it bound', () => {
    expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
  });

  it('D34: runs on the embedded database and applies the migrations first', () => {
    expect(output).toMatch(/database: embedded PGlite in .*pgdata, migrations applied: 1/);
  });

  it('says in its banner what it is connected to: the in-process bus, gRPC without TLS', async () => {
    // The gRPC line follows the URL line.
    await waitForOutput(/^agents' gRPC service on port/m);
    expect(output).toMatch(/^events: the in-process bus/m);
    expect(output).toMatch(/^agents' gRPC service on port [1-9]\d* of 127\.0\.0\.1, plain text/m);
  });

  it('D34: prints demo tokens that work over HTTP', async () => {
    await waitForOutput(/demo buyer token \(acc_\w+\): (gpux_\S+)/);
    const token = /demo buyer token \(acc_\w+\): (gpux_\S+)/.exec(output)?.[1];
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
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
    expect({ code, signal, output }).toMatchObject({ code: 0, signal: null });
  });
});
