// Loopback ports for tests.

import { once } from 'node:events';
import { createServer } from 'node:net';

/** A port on 127.0.0.1 that nothing listens on now (bound once by the system, then closed). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  await once(server, 'close');
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
