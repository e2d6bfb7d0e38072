// A watcher's HTTP response as the feed writes it: straight to its socket.
//
// Through node:http's ServerResponse every write of every watcher frames its
// chunk afresh (size line, body, CRLF), corks the socket and uncorks it on
// the next tick: per watcher, per flush. The fan-out writes the same bytes
// to a thousand watchers (feed/fan-out.ts), so here a chunk is framed once,
// kept with the buffer it frames, and handed to each socket in one write
// (docs/benchmarks.md, "The live feed"). The response's own head and its
// last chunk still go through ServerResponse, in order with these writes,
// because they all reach the same socket's queue.

import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

import type { FeedSink } from './watcher.js';

const CRLF = Buffer.from('\r\n');

/** Framed chunks of shared buffers, kept as long as the buffer is (the fan-out's joined events). */
const framed = new WeakMap<Buffer, Buffer>();

/** `body` as one chunk of HTTP/1.1 chunked transfer coding. */
export function chunkOf(body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`, 'latin1'), body, CRLF]);
}

function framedOf(body: Buffer): Buffer {
  let f = framed.get(body);
  if (f === undefined) {
    f = chunkOf(body);
    framed.set(body, f);
  }
  return f;
}

/** The last chunk of a chunked body (no trailers). */
export const LAST_CHUNK = Buffer.from('0\r\n\r\n');

export class SocketSink implements FeedSink {
  /**
   * `chunked`: false for an HTTP/1.0 client (the body is the bytes until the
   * connection closes). `finish`: writes what ends the body, before the
   * socket ends.
   */
  constructor(
    private readonly socket: Socket,
    private readonly chunked: boolean,
    private readonly finish: () => void,
  ) {}

  /** `res`: its head set (writeHead); it is sent now, ahead of every event. */
  static ofResponse(res: ServerResponse): SocketSink {
    res.flushHeaders();
    // node:http decides at the head whether the body is chunked (HTTP/1.1, no length).
    const chunked = (res as ServerResponse & { chunkedEncoding: boolean }).chunkedEncoding;
    return new SocketSink(res.socket as Socket, chunked, () => res.end());
  }

  /** A socket handed over after its head (feed/writer-process.ts): the last chunk is written here. */
  static ofSocket(socket: Socket, chunked: boolean): SocketSink {
    return new SocketSink(socket, chunked, () => {
      if (chunked) socket.write(LAST_CHUNK);
    });
  }

  write(chunk: Buffer | string): boolean {
    if (typeof chunk === 'string') {
      if (chunk.length === 0) return true;
      const body = Buffer.from(chunk);
      return this.socket.write(this.chunked ? chunkOf(body) : body);
    }
    if (chunk.length === 0) return true;
    return this.socket.write(this.chunked ? framedOf(chunk) : chunk);
  }

  /** Ends the body (its last chunk) and the connection. */
  end(): void {
    if (!this.socket.writableEnded) this.finish();
    this.socket.end();
  }

  destroy(): void {
    this.socket.destroy();
  }

  get writableLength(): number {
    return this.socket.writableLength;
  }

  get writableEnded(): boolean {
    return this.socket.writableEnded;
  }

  get destroyed(): boolean {
    return this.socket.destroyed;
  }
}
