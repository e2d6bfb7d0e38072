// The bench's lean HTTP client against a raw TCP server that answers the way
// the test says: split into small chunks, without Content-Length, or not at all.

import net from 'node:net';
import type { AddressInfo } from 'node:net';

import { afterEach, describe, expect, it } from 'vitest';

import { LeanHttpClient } from './http-client.js';

type Answer = (socket: net.Socket, request: string) => void;

let server: net.Server | undefined;
let client: LeanHttpClient | undefined;

afterEach(async () => {
  client?.close();
  await new Promise((r) => (server === undefined ? r(undefined) : server.close(r)));
  server = undefined;
});

/** A server that calls `answer` once per complete request (headers and Content-Length body). */
async function serve(answer: Answer): Promise<string> {
  server = net.createServer((socket) => {
    let buf = '';
    socket.on('data', (chunk) => {
      buf += chunk.toString('latin1');
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(buf.slice(0, end))?.[1] ?? 0);
        if (buf.length < end + 4 + length) return;
        const request = buf.slice(0, end + 4 + length);
        buf = buf.slice(end + 4 + length);
        answer(socket, request);
      }
    });
  });
  await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server?.address() as AddressInfo).port}`;
}

function response(status: number, body: string): string {
  return `HTTP/1.1 ${status} X\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

describe('LeanHttpClient', () => {
  it('reads answers split into chunks of a few bytes, and sends the body with its length', async () => {
    const seen: string[] = [];
    const url = await serve((socket, request) => {
      seen.push(request);
      const whole = Buffer.from(response(201, '{"name":"ü"}'));
      for (let i = 0; i < whole.length; i += 3) socket.write(whole.subarray(i, i + 3));
    });
    client = new LeanHttpClient(url, 2);
    await client.open();
    const head = client.head('POST', '/v1/orders', { authorization: 'Bearer t' });
    const answers = await Promise.all([1, 2, 3].map((n) => client!.request(head, `{"n":${n}}`)));
    expect(answers).toEqual([1, 2, 3].map(() => ({ status: 201, body: '{"name":"ü"}' })));
    expect(seen).toHaveLength(3);
    expect(seen[0]).toMatch(/^POST \/v1\/orders HTTP\/1\.1\r\n/);
    expect(seen[0]).toContain('authorization: Bearer t\r\n');
    expect(seen[0]).toMatch(/content-length: 7\r\n\r\n\{"n":\d\}$/);
  });

  it('fails a request whose answer has no Content-Length', async () => {
    const url = await serve((socket) =>
      socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n'),
    );
    client = new LeanHttpClient(url, 1);
    await client.open();
    await expect(client.request(client.head('POST', '/', {}), '{}')).rejects.toMatchObject({
      code: 'EBADRESPONSE',
    });
  });

  it('fails a request whose connection is closed, and goes on with a new connection', async () => {
    let calls = 0;
    const url = await serve((socket) => {
      calls++;
      if (calls === 1) socket.destroy();
      else socket.write(response(200, '{}'));
    });
    client = new LeanHttpClient(url, 1);
    await client.open();
    const head = client.head('POST', '/', {});
    await expect(client.request(head, '{}')).rejects.toMatchObject({ code: 'ECONNRESET' });
    expect(await client.request(head, '{}')).toEqual({ status: 200, body: '{}' });
  });

  it('fails the requests still waiting for a connection when closed', async () => {
    const url = await serve(() => undefined);
    client = new LeanHttpClient(url, 1);
    await client.open();
    const head = client.head('POST', '/', {});
    const inFlight = client.request(head, '{}');
    const waiting = client.request(head, '{}');
    client.close();
    await expect(waiting).rejects.toMatchObject({ code: 'ECLOSED' });
    await expect(inFlight).rejects.toMatchObject({ code: 'ECONNRESET' });
  });
});
