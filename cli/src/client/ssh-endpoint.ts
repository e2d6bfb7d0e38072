// Whether something at a lease's SSH endpoint (its `ssh_access` entry,
// docs/api/leases.md) answers the SSH handshake: an SSH server speaks first, a line `SSH-2.0-…` (RFC 4253
// §4.2), so reading that banner over TCP tells sshd is up without
// logging in.

import { connect } from 'node:net';

/** Where to connect: an `ssh_access` entry's host (no brackets) and port. */
export interface SshEndpoint {
  readonly host: string;
  readonly port: number;
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
