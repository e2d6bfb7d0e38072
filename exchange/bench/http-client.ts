// The HTTP bench's load generator: a lean HTTP/1.1 client over a fixed set of
// keep-alive TCP connections, one request in flight per connection, requests
// waiting in one FIFO queue when every connection is busy.
//
// Why not undici (used for the bench's set-up): the generator runs on the
// same two cores as the exchange and PostgreSQL, so its CPU and its garbage
// collector's pauses are part of what a request's latency measures. undici
// costs ~0.15–0.3 ms of CPU per request here; this client writes one
// prebuilt string per request and reads the answer by its Content-Length
// (every answer of the exchange has one), a few µs of work. Like wrk, it
// does just enough HTTP to drive one server; it is not a general client.

import net from 'node:net';

export interface Answer {
  readonly status: number;
  readonly body: string;
}

interface Job {
  readonly head: string;
  readonly body: string;
  readonly resolve: (a: Answer) => void;
  readonly reject: (e: Error) => void;
}

const HEADER_END = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i;
const CONNECTION_CLOSE = /\r\nconnection:[ \t]*close/i;
const CHUNKED = /\r\ntransfer-encoding:/i;
const RECONNECT_DELAY_MS = 100;

class TransportError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

class Connection {
  private socket: net.Socket | undefined;
  private buf: Buffer | undefined;
  private closing = false;
  job: Job | undefined;
  /** In the client's idle list. */
  idle = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly onIdle: (c: Connection) => void,
  ) {}

  connect(): Promise<void> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: this.host, port: this.port, noDelay: true });
      s.once('connect', () => resolve());
      s.once('error', reject);
      s.on('data', (chunk: Buffer) => this.onData(chunk));
      s.on('error', () => undefined);
      s.on('close', () => this.onClose());
      this.socket = s;
    });
  }

  send(job: Job): void {
    this.job = job;
    const s = this.socket;
    if (s === undefined || s.destroyed) {
      this.fail(new TransportError('ECONNRESET', 'connection closed'));
      return;
    }
    s.write(job.head + job.body);
  }

  close(): void {
    this.closing = true;
    this.socket?.destroy();
  }

  private onData(chunk: Buffer): void {
    const buf = this.buf === undefined ? chunk : Buffer.concat([this.buf, chunk]);
    const end = buf.indexOf(HEADER_END);
    if (end < 0) {
      this.buf = buf;
      return;
    }
    const head = buf.toString('latin1', 0, end);
    const length = CONTENT_LENGTH.exec(head)?.[1];
    if (length === undefined || CHUNKED.test(head)) {
      this.buf = undefined;
      this.fail(new TransportError('EBADRESPONSE', 'an answer without Content-Length'));
      this.socket?.destroy();
      return;
    }
    const bodyStart = end + HEADER_END.length;
    const bodyEnd = bodyStart + Number(length);
    if (buf.length < bodyEnd) {
      this.buf = buf;
      return;
    }
    // One request in flight: anything past this answer is a protocol error.
    this.buf = undefined;
    const job = this.job;
    this.job = undefined;
    const status = Number(head.slice(9, 12));
    job?.resolve({ status, body: buf.toString('utf8', bodyStart, bodyEnd) });
    if (CONNECTION_CLOSE.test(head)) {
      this.socket?.destroy();
      return;
    }
    this.onIdle(this);
  }

  private onClose(): void {
    this.buf = undefined;
    this.fail(new TransportError('ECONNRESET', 'the server closed the connection'));
    if (this.closing) return;
    // Reconnect, so one closed connection does not shrink the pool for good;
    // after a pause, so a server that is gone is not hammered with connects.
    setTimeout(() => {
      if (this.closing) return;
      this.connect().then(
        () => this.onIdle(this),
        () => undefined,
      );
    }, RECONNECT_DELAY_MS).unref();
  }

  private fail(err: Error): void {
    const job = this.job;
    this.job = undefined;
    job?.reject(err);
  }
}

export class LeanHttpClient {
  private readonly idle: Connection[] = [];
  private readonly all: Connection[] = [];
  private readonly waiting: Job[] = [];
  private waitingHead = 0;
  private readonly hostHeader: string;

  constructor(
    url: string,
    private readonly connections: number,
  ) {
    const u = new URL(url);
    this.hostHeader = u.host;
    const port = u.port === '' ? 80 : Number(u.port);
    for (let i = 0; i < connections; i++) {
      this.all.push(new Connection(u.hostname, port, (c) => this.onIdle(c)));
    }
  }

  async open(): Promise<void> {
    await Promise.all(this.all.map((c) => c.connect()));
    for (const c of this.all) this.onIdle(c);
  }

  /** The request head for these headers; build it once and reuse it. */
  head(method: string, path: string, headers: Readonly<Record<string, string>>): string {
    let h = `${method} ${path} HTTP/1.1\r\nhost: ${this.hostHeader}\r\n`;
    for (const [k, v] of Object.entries(headers)) h += `${k}: ${v}\r\n`;
    return h;
  }

  /** Sends `head` (from head()) with `body`; resolves with the answer. */
  request(head: string, body: string): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      const job: Job = {
        head: `${head}content-length: ${Buffer.byteLength(body)}\r\n\r\n`,
        body,
        resolve,
        reject,
      };
      const c = this.idle.pop();
      if (c === undefined) this.waiting.push(job);
      else {
        c.idle = false;
        c.send(job);
      }
    });
  }

  /** Closes every connection; requests still waiting for one fail. */
  close(): void {
    for (const c of this.all) c.close();
    const left = this.waiting.splice(this.waitingHead);
    this.waiting.length = 0;
    this.waitingHead = 0;
    for (const job of left) job.reject(new TransportError('ECLOSED', 'the client was closed'));
  }

  private onIdle(c: Connection): void {
    if (c.job !== undefined || c.idle) return;
    if (this.waitingHead < this.waiting.length) {
      const job = this.waiting[this.waitingHead++];
      if (this.waitingHead > 1024 && this.waitingHead * 2 > this.waiting.length) {
        this.waiting.splice(0, this.waitingHead);
        this.waitingHead = 0;
      }
      if (job !== undefined) {
        c.send(job);
        return;
      }
    }
    c.idle = true;
    this.idle.push(c);
  }
}
