// The app over real sockets on 127.0.0.1: HTTP that never becomes a request,
// and D34's drain with connections held open. In the db project rather than
// unit because unit tests open no sockets; no database is used.

import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';

import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';

import { buildApp } from '../app.js';
import { client, parse } from './testing/raw-http.js';

let app: FastifyInstance | undefined;

function testApp(): FastifyInstance {
  app = buildApp({ logLevel: 'silent' }, 'offline');
  return app;
}

afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('the app over sockets', () => {
  it('answers malformed HTTP and oversized headers with the invalid_request envelope, never a bare error', async () => {
    const a = testApp();
    await a.listen({ host: '127.0.0.1', port: 0 });
    const { port } = a.server.address() as AddressInfo;
    const raw = (text: string): Promise<string> =>
      new Promise((resolve, reject) => {
        let got = '';
        const sock = connect(port, '127.0.0.1', () => sock.write(text));
        sock.on('data', (d: Buffer) => (got += d.toString('utf8')));
        sock.on('close', () => resolve(got));
        sock.on('error', reject);
      });
    for (const text of [
      'NOT HTTP AT ALL\r\n\r\n',
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    ]) {
      const answer = await raw(text);
      expect(answer.startsWith('HTTP/1.1 400 ')).toBe(true);
      const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as unknown;
      expect(body).toMatchObject({ data: null, error: { code: 'invalid_request' } });
    }
  });

  it('D34: while draining, a running request finishes with Connection: close, and one arriving meanwhile gets 503 unavailable in the D19 envelope', async () => {
    const a = testApp();
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered = (): void => undefined;
    const running = new Promise<void>((resolve) => (entered = resolve));
    a.get('/v1/slow', { config: { access: 'public' } }, async () => {
      entered();
      await gate;
      return { done: true };
    });
    const port = await listen(a);

    const slow = client(port);
    slow.socket.write('GET /v1/slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await running;
    // A request whose headers are half sent when the drain starts.
    const late = client(port);
    late.socket.write('GET /v1/slow HTTP/1.1\r\nHost: x\r\n');
    // Once another connection has been answered, the half-sent headers have been read.
    await client(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n').closed;

    const drained = a.drain(30_000);
    app = undefined;
    late.socket.write('\r\n');
    const refused = parse(await late.closed);
    expect(refused.status).toBe(503);
    expect(refused.headers['connection']).toBe('close');
    expect(refused.body).toEqual({
      data: null,
      error: { code: 'unavailable', message: expect.any(String) as string },
    });

    release();
    const finished = parse(await slow.closed);
    expect(finished.status).toBe(200);
    expect(finished.headers['connection']).toBe('close');
    expect(finished.body).toEqual({ done: true });
    expect(await drained).toEqual({ forced: false });
  });

  it('D34: a connection still open at the deadline is closed, so the drain ends', async () => {
    const a = testApp();
    const port = await listen(a);
    const held = client(port);
    held.socket.write('POST /v1/orders HTTP/1.1\r\nHost: x\r\nContent-Le');
    await client(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n').closed;
    app = undefined;
    expect(await a.drain(100)).toEqual({ forced: true });
    expect(await held.closed).toBe('');
  });
});

async function listen(a: FastifyInstance): Promise<number> {
  await a.listen({ host: '127.0.0.1', port: 0 });
  return (a.server.address() as AddressInfo).port;
}
