// A lease's SSH endpoint as the lease read gives it (`<user>@<host>:<port>`,
// docs/api/leases.md), and whether something there answers the SSH
// handshake: an SSH server speaks first, a line `SSH-2.0-…` (RFC 4253
// §4.2), so reading that banner over TCP tells sshd is up without
// logging in.

import { connect } from 'node:net';

export interface SshEndpoint {
  readonly user: string;
  /** Without the brackets of an IPv6 address. */
  readonly host: string;
  readonly port: number;
}

/** `<user>@<host>:<port>` (host may be `[v6]`); undefined when it is not one. */
export function parseEndpoint(endpoint: string): SshEndpoint | undefined {
  const m = /^([^@\s]+)@(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(endpoint.trim());
  if (m === null) return undefined;
  const [, user = '', host = '', port = '0'] = m;
  const n = Number(port);
  if (n < 1 || n > 65_535) return undefined;
  return { user, host: host.replace(/^\[(.*)\]$/, '$1'), port: n };
}

/** The host as known_hosts and ssh name it: `host` on port 22, else `[host]:port`. */
export function knownHostsName(e: SshEndpoint): string {
  return e.port === 22 ? e.host : `[${e.host}]:${e.port}`;
}

/** The SSH server's banner line at `e` (`SSH-2.0-…`), or undefined when none came within `timeoutMs`. */
export function sshBanner(e: SshEndpoint, timeoutMs = 3_000): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host: e.host, port: e.port });
    let seen = '';
    const done = (banner: string | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(banner);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1');
      // The server may send other lines before its version line (RFC 4253 §4.2).
      for (const line of seen.split('\n').slice(0, -1)) {
        if (line.startsWith('SSH-')) return done(line.replace(/\r$/, ''));
      }
      if (seen.length > 8_192) done(undefined);
    });
    socket.on('error', () => done(undefined));
    socket.on('close', () => done(undefined));
  });
}
