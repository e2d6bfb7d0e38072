// The SSH banner probe against a local TCP server: a server that speaks SSH answers, one that says
// something else or nothing does not.

import { createServer } from 'node:net';
import type { Server } from 'node:net';

import { afterEach, describe, expect, it } from 'vitest';

import { sshBanner } from './ssh-endpoint.js';

describe('sshBanner', () => {
  let server: Server | undefined;
  afterEach(() => {
    server?.close();
  });

  async function serve(greeting: string | null): Promise<number> {
    server = createServer((socket) => {
      if (greeting !== null) socket.write(greeting);
      else socket.end();
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    return typeof address === 'object' && address !== null ? address.port : 0;
  }

  it('reads the version line, after any lines before it', async () => {
    const port = await serve('hello\r\nSSH-2.0-OpenSSH_9.6\r\n');
    expect(await sshBanner({ host: '127.0.0.1', port })).toBe('SSH-2.0-OpenSSH_9.6');
  });

  it('no banner: a server that closes, or one that says something else and waits', async () => {
    expect(await sshBanner({ host: '127.0.0.1', port: await serve(null) })).toBeUndefined();
    server?.close();
    const port = await serve('HTTP/1.1 400 Bad Request\r\n');
    expect(await sshBanner({ host: '127.0.0.1', port }, 200)).toBeUndefined();
  });
});
