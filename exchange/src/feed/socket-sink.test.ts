// The feed's writes straight to a watcher's socket must still be the HTTP
// the client asked for: chunked transfer coding for HTTP/1.1 (read back by
// node:http's own parser), the plain bytes until close for HTTP/1.0, and a
// body that ends properly when the feed ends the stream.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';

import { afterEach, describe, expect, it } from 'vitest';

import { SocketSink, chunkOf } from './socket-sink.js';

let server: http.Server | undefined;

afterEach(async () => {
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

/** A server whose one answer is written by a SocketSink through `script`. */
async function serve(script: (sink: SocketSink) => void): Promise<number> {
  server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    script(SocketSink.ofResponse(res));
  });
  await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

/** Everything a raw client receives until the server closes the connection. */
function rawGet(port: number, version: '1.0' | '1.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString()));
    s.on('end', () => resolve(got));
    s.on('error', reject);
    s.write(`GET / HTTP/${version}\r\nHost: x\r\n\r\n`);
  });
}

describe('SocketSink', () => {
  it('frames a chunk as HTTP/1.1 chunked coding: size in hex, CRLF, the bytes, CRLF', () => {
    expect(chunkOf(Buffer.from('0123456789abcdefXYZ')).toString()).toBe(
      '13\r\n0123456789abcdefXYZ\r\n',
    );
  });

  it('an HTTP/1.1 client reads the events, shared buffers and strings alike, and the end of the body', async () => {
    const shared = Buffer.from('id: 1\nevent: level\ndata: {}\n\n');
    const port = await serve((sink) => {
      sink.write('retry: 1000\n\n');
      sink.write(shared);
      sink.write(shared);
      sink.write('');
      sink.end();
    });
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get(`http://127.0.0.1:${port}/`, (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve(text));
          res.on('error', reject);
        })
        .on('error', reject);
    });
    expect(body).toBe(`retry: 1000\n\n${shared.toString()}${shared.toString()}`);
  });

  it('an HTTP/1.0 client gets the bytes unframed, ended by the close of the connection', async () => {
    const port = await serve((sink) => {
      sink.write('retry: 1000\n\n');
      sink.write(Buffer.from('event: heartbeat\ndata: {}\n\n'));
      sink.end();
    });
    const got = await rawGet(port, '1.0');
    expect(got.slice(got.indexOf('\r\n\r\n') + 4)).toBe(
      'retry: 1000\n\nevent: heartbeat\ndata: {}\n\n',
    );
  });

  it('counts what a client that stopped reading has not taken (the bound of slow watchers)', async () => {
    let held = -1;
    const port = await serve((sink) => {
      const mb = Buffer.alloc(1024 * 1024, 'x');
      for (let i = 0; i < 32; i++) sink.write(mb);
      held = sink.writableLength;
      client.destroy();
    });
    const client = connect(port, '127.0.0.1');
    client.on('error', () => undefined);
    client.pause();
    client.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise<void>((r) => client?.on('close', () => r()));
    // More than the kernel's loopback buffers take: the rest waits in the process.
    expect(held).toBeGreaterThan(16 * 1024 * 1024);
  });
});
