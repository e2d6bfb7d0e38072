// pods/portforward over WebSocket, as the kubelet serves it and
// @kubernetes/client-node's PortForward speaks it (v4.channel.k8s.io, or the
// unversioned channel.k8s.io): the `ports` query names the pod's ports; port
// i gets channel 2i for data and 2i+1 for errors, and the first message the
// server sends on each of them is the port number (2 bytes, little endian).
// Every message starts with its channel. The double's pods have no network of
// their own: a pod's localhost is this machine's 127.0.0.1, where its exec
// sessions (exec.ts) run their processes too.

import type { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';

const PROTOCOLS = ['v4.channel.k8s.io', 'channel.k8s.io'];
const wss = new WebSocketServer({
  noServer: true,
  handleProtocols: (offered) => PROTOCOLS.find((p) => offered.has(p)) ?? false,
});

/** The `ports` of a port-forward request: each 1 … 65535. undefined: none or a bad one. */
export function forwardPorts(query: URLSearchParams): number[] | undefined {
  const ports = query
    .getAll('ports')
    .flatMap((v) => v.split(','))
    .map((v) => v.trim());
  if (ports.length === 0) return undefined;
  const out: number[] = [];
  for (const p of ports) {
    const n = Number(p);
    if (!/^\d+$/.test(p) || n < 1 || n > 65_535) return undefined;
    out.push(n);
  }
  return out;
}

export function handlePortForwardUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  session: {
    readonly podUid: string;
    readonly ports: readonly number[];
    /** Open sessions: their end (close the socket), by the pod's uid and its kill. */
    readonly sessions: Map<() => void, { podUid: string; kill: () => void }>;
  },
): void {
  wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
    const send = (channel: number, data: Buffer): void => {
      if (ws.readyState === ws.OPEN) ws.send(Buffer.concat([Buffer.from([channel]), data]));
    };
    const conns: Socket[] = [];
    const end = (): void => {
      for (const c of conns) c.destroy();
      ws.terminate();
    };
    session.sessions.set(end, { podUid: session.podUid, kill: end });
    session.ports.forEach((port, i) => {
      const portBytes = Buffer.alloc(2);
      portBytes.writeUInt16LE(port);
      send(2 * i, portBytes);
      send(2 * i + 1, portBytes);
      const conn = connect({ host: '127.0.0.1', port });
      conns.push(conn);
      conn.on('data', (d: Buffer) => send(2 * i, d));
      conn.on('error', (err) => {
        // The kubelet's words for a port nothing listens on.
        send(
          2 * i + 1,
          Buffer.from(
            `an error occurred forwarding ${port} -> ${port}: error forwarding port ${port} to pod: ${err.message}`,
          ),
        );
        ws.close(1000);
      });
      conn.on('close', () => ws.close(1000));
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      const buf = isBinary ? data : Buffer.from(data.toString(), 'utf8');
      const channel = buf[0];
      if (channel === undefined || channel % 2 !== 0) return;
      conns[channel / 2]?.write(buf.subarray(1));
    });
    ws.on('close', () => {
      session.sessions.delete(end);
      for (const c of conns) c.destroy();
    });
  });
}
