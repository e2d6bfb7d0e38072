// The agents bench's gRPC client: unary calls over one node:http2 session,
// as the gRPC over HTTP/2 protocol has them (PROTOCOL-HTTP2.md in grpc/grpc).
//
// Why not grpc-js (what the real agent uses): the simulated agents run on
// the same two cores as the exchange and PostgreSQL, and grpc-js cost them
// ~0.5–1.2 ms of CPU a heartbeat here (its channel, call and filter stacks,
// Metadata objects, a fresh encoding of the message each time): at 1,000
// heartbeats a second, half a core taken from what the bench measures. This
// client sends a request prepared once (headers, and the message with its
// 5-byte frame prefix) and reads the status from the trailers, decoding the
// answer only when asked. It is still a gRPC client over the network to the
// exchange's grpc-js server, one HTTP/2 connection each, like a grpc-js
// channel; like the HTTP bench's lean client, it does just enough of the
// protocol to drive one server (no compression, TLS, retries or streaming).

import http2 from 'node:http2';
import type { ClientHttp2Session, ClientHttp2Stream, OutgoingHttpHeaders } from 'node:http2';

import { status } from '@grpc/grpc-js';

/** A unary call's request, made once and sent any number of times. */
export interface PreparedCall {
  readonly headers: OutgoingHttpHeaders;
  /** The length-prefixed message: flag 0 (not compressed), length (big-endian), bytes. */
  readonly body: Buffer;
}

export interface GrpcAnswer {
  /** A gRPC status code (`status` of grpc-js). */
  readonly code: status;
  readonly details: string;
  /** The `retry-after-ms` trailer of the exchange's limits (docs/providers.md), if a decimal integer. */
  readonly retryAfterMs: number | undefined;
  /** The response message (frame prefix removed), when the call asked for it and the status is OK. */
  readonly message: Buffer | undefined;
}

const { NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_INADEQUATE_SECURITY } = http2.constants;
const { NGHTTP2_REFUSED_STREAM } = http2.constants;

/** The message with gRPC's 5-byte prefix (uncompressed). */
export function grpcFrame(message: Uint8Array): Buffer {
  const body = Buffer.allocUnsafe(5 + message.length);
  body[0] = 0;
  body.writeUInt32BE(message.length, 1);
  body.set(message, 5);
  return body;
}

/** The one message of a unary answer's body; a string says what is wrong with it. */
export function readGrpcFrame(body: Buffer): Buffer | string {
  if (body.length < 5) return `a response body of ${body.length} bytes, no message frame`;
  if (body[0] !== 0) return `a compressed response message (flag ${body[0]}), none asked for`;
  const length = body.readUInt32BE(1);
  if (body.length !== 5 + length) {
    return `a response body of ${body.length} bytes for a message of ${length}`;
  }
  return body.subarray(5);
}

/** gRPC's mapping of an HTTP status without a grpc-status (http-grpc-status-mapping.md). */
function codeOfHttpStatus(httpStatus: number): status {
  switch (httpStatus) {
    case 400:
      return status.INTERNAL;
    case 401:
      return status.UNAUTHENTICATED;
    case 403:
      return status.PERMISSION_DENIED;
    case 404:
      return status.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return status.UNAVAILABLE;
    default:
      return status.UNKNOWN;
  }
}

/** A stream reset by the server without a status, as grpc-js maps it. */
function codeOfRstCode(rstCode: number): status {
  switch (rstCode) {
    case NGHTTP2_REFUSED_STREAM:
      return status.UNAVAILABLE;
    case NGHTTP2_CANCEL:
      return status.CANCELLED;
    case NGHTTP2_ENHANCE_YOUR_CALM:
      return status.RESOURCE_EXHAUSTED;
    case NGHTTP2_INADEQUATE_SECURITY:
      return status.PERMISSION_DENIED;
    default:
      return status.INTERNAL;
  }
}

function headerString(h: http2.IncomingHttpHeaders, name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
}

/** grpc-message is percent-encoded (non-ASCII and control characters). */
function decodeMessage(raw: string | undefined): string {
  if (raw === undefined) return '';
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** The status a set of headers or trailers carries, if any. */
function statusIn(h: http2.IncomingHttpHeaders): Omit<GrpcAnswer, 'message'> | undefined {
  const raw = headerString(h, 'grpc-status');
  if (raw === undefined) return undefined;
  const code = /^\d{1,2}$/.test(raw) ? Number(raw) : NaN;
  const retry = headerString(h, 'retry-after-ms');
  return {
    code: Number.isInteger(code) && code <= 16 ? code : status.UNKNOWN,
    details: decodeMessage(headerString(h, 'grpc-message')),
    retryAfterMs: retry !== undefined && /^\d{1,10}$/.test(retry) ? Number(retry) : undefined,
  };
}

const answer = (code: status, details: string): GrpcAnswer => ({
  code,
  details,
  retryAfterMs: undefined,
  message: undefined,
});

export interface LeanGrpcOptions {
  /** `host:port` of a plain-text (h2c) gRPC server. */
  readonly target: string;
  /** A call not answered within this ends DEADLINE_EXCEEDED (and is sent as its grpc-timeout). */
  readonly deadlineMs: number;
}

/**
 * One HTTP/2 connection to a gRPC server, opened at the first call and again
 * at the next call after it closed (an error, the server's GOAWAY), as a
 * grpc-js channel reconnects; calls made while it connects wait for it.
 */
export class LeanGrpcClient {
  private session: ClientHttp2Session | undefined;
  private readonly url: string;
  /** Connections opened, and GOAWAYs received (what the tests watch). */
  connections = 0;
  goaways = 0;

  constructor(private readonly options: LeanGrpcOptions) {
    this.url = `http://${options.target}`;
  }

  /** The request of `path` (`/package.Service/Method`) with `message` (its encoded bytes). */
  prepare(path: string, message: Uint8Array, token: string): PreparedCall {
    return {
      headers: {
        ':method': 'POST',
        ':path': path,
        'content-type': 'application/grpc',
        te: 'trailers',
        'grpc-timeout': `${this.options.deadlineMs}m`,
        authorization: `Bearer ${token}`,
        'user-agent': 'gpux-bench-agents',
      },
      body: grpcFrame(message),
    };
  }

  /** One unary call; `decode`: keep the answer's message. Never rejects: a failure is a status. */
  call(prepared: PreparedCall, decode = false): Promise<GrpcAnswer> {
    let session = this.live();
    let stream: ClientHttp2Stream;
    try {
      stream = session.request(prepared.headers);
    } catch {
      // Closed between its GOAWAY and our seeing it: a new connection.
      this.session = undefined;
      session = this.live();
      try {
        stream = session.request(prepared.headers);
      } catch (err) {
        return Promise.resolve(answer(status.UNAVAILABLE, String(err)));
      }
    }
    return new Promise((resolve) => {
      let done = false;
      let httpStatus = 0;
      let result: Omit<GrpcAnswer, 'message'> | undefined;
      let error: Error | undefined;
      const chunks: Buffer[] = [];
      const finish = (a: GrpcAnswer): void => {
        if (done) return;
        done = true;
        clearTimeout(deadline);
        resolve(a);
      };
      const deadline = setTimeout(() => {
        finish(answer(status.DEADLINE_EXCEEDED, 'Deadline exceeded'));
        stream.close(NGHTTP2_CANCEL);
      }, this.options.deadlineMs);
      stream.on('response', (h) => {
        httpStatus = Number(h[':status']);
        // A trailers-only answer: the status is in the one set of headers.
        result = statusIn(h);
      });
      stream.on('trailers', (h: http2.IncomingHttpHeaders) => {
        result = statusIn(h) ?? result;
      });
      if (decode) stream.on('data', (c: Buffer) => chunks.push(c));
      else stream.resume();
      stream.on('error', (err: Error) => {
        error = err;
      });
      stream.on('close', () => {
        if (result !== undefined) {
          let message: Buffer | undefined;
          if (decode && result.code === status.OK) {
            const m = readGrpcFrame(Buffer.concat(chunks));
            if (typeof m === 'string') return finish(answer(status.INTERNAL, m));
            message = m;
          }
          return finish({ ...result, message });
        }
        if (httpStatus !== 0 && httpStatus !== 200) {
          return finish(answer(codeOfHttpStatus(httpStatus), `HTTP status ${httpStatus}`));
        }
        if (session.destroyed && httpStatus === 0) {
          // No answer at all: the connection failed or went away.
          return finish(answer(status.UNAVAILABLE, error?.message ?? 'the connection closed'));
        }
        if (stream.rstCode !== undefined && stream.rstCode !== 0) {
          return finish(
            answer(codeOfRstCode(stream.rstCode), `stream reset with code ${stream.rstCode}`),
          );
        }
        finish(answer(status.INTERNAL, error?.message ?? 'the answer had no grpc-status'));
      });
      stream.end(prepared.body);
    });
  }

  private live(): ClientHttp2Session {
    const current = this.session;
    if (current !== undefined && !current.closed && !current.destroyed) return current;
    const s = http2.connect(this.url, { settings: { enablePush: false } });
    const forget = (): void => {
      if (this.session === s) this.session = undefined;
    };
    // Its calls fail with it (their streams see the error); the next call reconnects.
    s.on('error', forget);
    s.on('goaway', () => {
      this.goaways++;
      forget();
    });
    s.on('close', forget);
    this.session = s;
    this.connections++;
    return s;
  }

  close(): void {
    this.session?.close();
    this.session = undefined;
  }
}
