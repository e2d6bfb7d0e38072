// Raw HTTP/1.1 over a socket for tests that hold a request half sent (the
// drain, D34; the probes during it, issue 23): fetch cannot.

import type { Socket } from 'node:net';
import { connect } from 'node:net';

/** A raw connection; `closed` resolves with everything it received. */
export function client(
  port: number,
  send?: string,
  host = '127.0.0.1',
): { socket: Socket; closed: Promise<string> } {
  const socket = connect(port, host);
  if (send !== undefined) socket.write(send);
  const closed = new Promise<string>((resolve, reject) => {
    let got = '';
    socket.on('data', (d: Buffer) => (got += d.toString('utf8')));
    socket.on('close', () => resolve(got));
    socket.on('error', reject);
  });
  return { socket, closed };
}

/** One HTTP/1.1 answer with a JSON body of known length. */
export function parse(text: string): {
  status: number;
  headers: Record<string, string>;
  body: unknown;
} {
  const end = text.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(
    lines.map((l) => [
      l.slice(0, l.indexOf(':')).toLowerCase(),
      l.slice(l.indexOf(':') + 1).trim(),
    ]),
  );
  return {
    status: Number(statusLine.split(' ')[1]),
    headers,
    body: JSON.parse(text.slice(end + 4)) as unknown,
  };
}
