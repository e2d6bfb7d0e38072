// One `direct-tcpip` channel (`ssh -L`): bytes both ways between the SSH
// channel and the socket the backend connected.

import type { Duplex } from 'node:stream';
import type { ServerChannel } from 'ssh2';
import type { TrackedChannel } from './session-channel.js';

export class ForwardChannel implements TrackedChannel {
  readonly closed: Promise<void>;
  private resolveClosed!: () => void;
  private done = false;

  constructor(
    private readonly channel: ServerChannel,
    private readonly socket: Duplex,
  ) {
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
    socket.on('error', () => this.shut());
    channel.on('error', () => this.shut());
    channel.on('close', () => this.shut());
    // A socket that ends normally ends the channel through the pipe, after
    // the data still waiting for the client's window.
    channel.pipe(socket);
    socket.pipe(channel);
  }

  revoke(): Promise<void> {
    this.shut();
    return Promise.resolve();
  }

  connectionClosed(): void {
    this.shut();
  }

  private shut(): void {
    if (this.done) return;
    this.done = true;
    this.socket.destroy();
    this.channel.destroy(); // sends EOF and CLOSE
    this.resolveClosed();
  }
}
