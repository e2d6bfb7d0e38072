// GRPC_HOST (issue 20): the agents' gRPC service listens on an address of
// its own, apart from HOST's REST API — the REST API behind a proxy on this
// host, the gRPC service where agents reach it. Here two loopback
// addresses stand for the two: each service answers on its own and only
// there. Without GRPC_HOST both listen on HOST (the other tests).

import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startExchangeProcess } from './support/exchange-process.js';
import type { ExchangeProcess } from './support/exchange-process.js';

const dir = mkdtempSync(join(tmpdir(), 'gpux-grpc-host-'));
let ex: ExchangeProcess;

/** Does something accept TCP connections at host:port? */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

beforeAll(async () => {
  ex = await startExchangeProcess({
    HOST: '127.0.0.1',
    GRPC_HOST: '127.0.0.2',
    GPUX_DATA_DIR: dir,
    DATABASE_URL: '',
    NATS_URL: '',
  });
});

afterAll(async () => {
  await ex?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('GRPC_HOST', () => {
  it('the REST API listens on HOST only', async () => {
    const port = Number(new URL(ex.url).port);
    expect(ex.url).toMatch(/^http:\/\/127\.0\.0\.1:/);
    expect((await fetch(`${ex.url}/healthz`)).status).toBe(200);
    expect(await accepts('127.0.0.2', port)).toBe(false);
  });

  it("the agents' gRPC service listens on GRPC_HOST only, and the banner says where", async () => {
    expect(await accepts('127.0.0.2', ex.grpcPort)).toBe(true);
    expect(await accepts('127.0.0.1', ex.grpcPort)).toBe(false);
    expect(ex.output()).toMatch(
      new RegExp(
        `^agents' gRPC service on port ${ex.grpcPort} of 127\\.0\\.0\\.2, plain text`,
        'm',
      ),
    );
  });
});
