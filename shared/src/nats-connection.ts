// The one way both programs connect to NATS (issue 20): the exchange's
// publisher (exchange/src/events/jetstream-publisher.ts) and the agent's
// consumer (agent/src/events/nats-event-stream.ts) read NATS_URL and
// NATS_CREDS the same way.
//
// - `nats://host[:port]`: TLS when the server requires it (the client
//   follows the server's INFO); `tls://host[:port]`: TLS or nothing, a
//   server without TLS is refused. The server's certificate is verified
//   against Node's CAs, NODE_EXTRA_CA_CERTS included (deploy/nats/README.md).
// - `user:password@` in the URL: user and password (URL-encoded);
//   NATS_CREDS: a .creds file or a user nkey seed (nats-credentials.ts).
// - The first connection is waited for without end, and so is every
//   reconnection; meanwhile a line is logged every 10 seconds, since the
//   client itself is silent while it tries.

import { connect, credsAuthenticator, nkeyAuthenticator } from '@nats-io/transport-node';
import type { ConnectionOptions, NatsConnection } from '@nats-io/transport-node';

import type { Logger } from './logger.js';
import type { NatsCredentials } from './nats-credentials.js';
import { SettingProblem } from './settings.js';
import type { Parser } from './settings.js';

export interface NatsConnectOptions {
  /** NATS_URL: nats://[user:password@]host[:port] or tls://… */
  readonly url: string;
  /** NATS_CREDS, read and checked (parseNatsCredentials). */
  readonly creds: NatsCredentials | undefined;
  /** The connection's name, as the server's monitoring shows it. */
  readonly name: string;
  /** Replies under this prefix (an agent's permissions allow only its own). */
  readonly inboxPrefix?: string | undefined;
  /** Between attempts to reconnect. */
  readonly reconnectWaitMs?: number | undefined;
  readonly logger: Logger;
}

/** A NATS URL taken apart; the password never leaves this. */
export interface NatsServer {
  /** host:port, as the client dials it. */
  readonly server: string;
  /** tls://: TLS or nothing. */
  readonly tlsRequired: boolean;
  readonly user: string | undefined;
}

/** Throws when `url` is not nats:// or tls:// with a host. */
export function natsServerOf(url: string): NatsServer {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error('NATS_URL must be nats://[user:password@]host[:port] or tls://…');
  }
  if ((u.protocol !== 'nats:' && u.protocol !== 'tls:') || u.hostname === '') {
    throw new Error('NATS_URL must be nats://[user:password@]host[:port] or tls://…');
  }
  return {
    server: `${u.hostname}:${u.port === '' ? '4222' : u.port}`,
    tlsRequired: u.protocol === 'tls:',
    user: u.username === '' ? undefined : decodeURIComponent(u.username),
  };
}

/** NATS_URL for a banner or a log line: scheme, host and port, never a password. */
export function describeNats(url: string): string {
  const s = natsServerOf(url);
  return `${s.tlsRequired ? 'tls' : 'nats'}://${s.user === undefined ? '' : `${s.user}@`}${s.server}`;
}

/** The client's options for `o` (what connectNats connects with). */
export function natsConnectionOptions(
  o: Pick<NatsConnectOptions, 'url' | 'creds' | 'name' | 'inboxPrefix' | 'reconnectWaitMs'>,
): ConnectionOptions {
  const server = natsServerOf(o.url);
  const u = new URL(o.url);
  return {
    servers: server.server,
    // tls://: TLS or nothing (nats:// takes TLS too when the server requires it).
    ...(server.tlsRequired ? { tls: {} } : {}),
    name: o.name,
    ...(o.inboxPrefix === undefined ? {} : { inboxPrefix: o.inboxPrefix }),
    ...(server.user === undefined
      ? {}
      : { user: server.user, pass: decodeURIComponent(u.password) }),
    ...(o.creds === undefined
      ? {}
      : {
          authenticator:
            o.creds.kind === 'creds'
              ? credsAuthenticator(o.creds.bytes)
              : nkeyAuthenticator(o.creds.seed),
        }),
    // Both programs wait for their server however long it is away.
    maxReconnectAttempts: -1,
    reconnectTimeWait: o.reconnectWaitMs ?? 500,
    waitOnFirstConnect: true,
  };
}

/** Connects (waiting without end for the first connection); logs what the connection goes through. */
export async function connectNats(o: NatsConnectOptions): Promise<NatsConnection> {
  const options = natsConnectionOptions(o);
  const server = describeNats(o.url);
  const started = Date.now();
  const waiting = setInterval(() => {
    o.logger.warn(
      { server, waitingMs: Date.now() - started },
      'still connecting to NATS: is the server up, and is its TLS certificate trusted (NODE_EXTRA_CA_CERTS, deploy/nats/README.md)?',
    );
  }, 10_000);
  waiting.unref();
  const nc = await connect(options).finally(() => clearInterval(waiting));
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'error') {
        o.logger.warn({ status: s.type, server }, `NATS ${s.type}`);
      }
    }
  })();
  return nc;
}

/** NATS_URL as a setting (shared/src/settings.ts): the same rule in both programs. */
export const natsUrl: Parser<string> = (t) => {
  try {
    natsServerOf(t);
    return t;
  } catch {
    throw new SettingProblem('must be nats://[user:password@]host[:port] or tls://…');
  }
};
