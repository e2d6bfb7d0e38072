// The SSH gateway: listens, admits connections up to the cap, times out
// logins that do not finish, and revokes a lease's access on demand.
//
// The TCP listener is ours, not ssh2's: sockets are counted and timed from
// the moment they connect (ssh2 only hears of a client once it has sent its
// version line) and then handed to ssh2 with injectSocket.

import { once } from 'node:events';
import { createServer } from 'node:net';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
// ssh2 is CommonJS without named exports Node can detect: import the object.
import ssh2 from 'ssh2';
import type { ClientInfo, Connection } from 'ssh2';
import { parseAuthorizedKey } from './authorized-keys.js';
import type { AuthorizedKey } from './authorized-keys.js';
import { compileGatewayConfig } from './gateway-config.js';
import type { SshGatewayConfig, SshGatewayOptions } from './gateway-config.js';
import { GatewayConnection } from './gateway-connection.js';
import type { HostKey } from './host-key.js';
import type { SshEndpoint } from './types.js';

export const SHUTDOWN_MESSAGE = 'gpux: the SSH gateway is shutting down';

export class SshGateway {
  readonly config: SshGatewayConfig;
  private readonly ssh: ssh2.Server;
  private readonly tcp: NetServer;
  private readonly sockets = new Set<Socket>();
  private readonly connections = new Set<GatewayConnection>();
  private readonly revoked = new Set<string>();
  private readonly keyCache = new WeakMap<readonly string[], readonly AuthorizedKey[]>();
  private started = false;

  /** Authenticated connections now (gpux_agent_ssh_sessions_open, metrics.ts). */
  get openSessions(): number {
    let n = 0;
    for (const c of this.connections) if (c.authenticated) n++;
    return n;
  }

  constructor(options: SshGatewayOptions) {
    this.config = compileGatewayConfig(options);
    this.ssh = new ssh2.Server({ hostKeys: [this.config.hostKey.privateKey], ident: 'gpux' });
    this.ssh.on('connection', (client: Connection, info: ClientInfo) => this.admit(client, info));
    this.ssh.on('error', (err: Error) => this.config.logger.error({ err }, 'ssh server error'));
    this.tcp = createServer((socket) => this.accept(socket));
    this.tcp.on('error', (err) => this.config.logger.error({ err }, 'ssh listener error'));
  }

  get hostKey(): HostKey {
    return this.config.hostKey;
  }

  /** Listens on host:port; resolves once listening. */
  async start(): Promise<void> {
    if (this.started) throw new Error('SshGateway already started');
    this.started = true;
    this.tcp.listen(this.config.port, this.config.host);
    await once(this.tcp, 'listening');
    const { host, port } = this.address();
    this.config.logger.info(
      { host, port, fingerprint: this.config.hostKey.fingerprint },
      'ssh gateway listening',
    );
  }

  address(): { host: string; port: number } {
    const addr = this.tcp.address() as AddressInfo | null;
    if (addr === null) throw new Error('SshGateway is not listening');
    return { host: addr.address, port: addr.port };
  }

  /**
   * Ends a lease's SSH access: its logins are refused from now on; every open
   * channel gets `message` on stderr and exit status 255, its processes are
   * killed, and its connections are ended. Resolves when all of that is done,
   * with the number of the lease's connections that were closed.
   */
  async revoke(leaseId: string, message: string): Promise<number> {
    this.revoked.add(leaseId);
    const ofLease = [...this.connections].filter((c) => c.leaseId === leaseId);
    const started = Date.now();
    await Promise.all(ofLease.map((c) => c.revoke(message)));
    this.config.logger.info(
      { leaseId, connections: ofLease.length, ms: Date.now() - started },
      'ssh access revoked',
    );
    return ofLease.length;
  }

  isRevoked(leaseId: string): boolean {
    return this.revoked.has(leaseId);
  }

  /** Stops listening and ends every connection as a revocation would. */
  async close(): Promise<void> {
    const listening = this.tcp.listening;
    const stopped = listening ? new Promise((resolve) => this.tcp.close(resolve)) : undefined;
    for (const socket of this.sockets) {
      if (![...this.connections].some((c) => c.authenticated && c.socket === socket)) {
        socket.destroy();
      }
    }
    await Promise.all([...this.connections].map((c) => c.revoke(SHUTDOWN_MESSAGE)));
    await stopped;
  }

  private accept(socket: Socket): void {
    const { maxConnections, authTimeoutMs } = this.config.limits;
    const remote = `${socket.remoteAddress}:${socket.remotePort}`;
    if (this.sockets.size >= maxConnections) {
      this.config.logger.warn(
        { remote, maxConnections },
        'ssh connection dropped: too many connections',
      );
      socket.destroy();
      return;
    }
    this.sockets.add(socket);
    const timer = setTimeout(() => {
      const connection = [...this.connections].find((c) => c.socket === socket);
      if (connection?.authenticated === true) return;
      this.config.logger.info({ remote, authTimeoutMs }, 'ssh connection closed: login timed out');
      socket.destroy();
    }, authTimeoutMs);
    socket.once('close', () => {
      clearTimeout(timer);
      this.sockets.delete(socket);
    });
    this.ssh.injectSocket(socket);
  }

  private admit(client: Connection, info: ClientInfo): void {
    const connection = new GatewayConnection(client, info, socketOf(client), {
      config: this.config,
      isRevoked: (leaseId) => this.isRevoked(leaseId),
      authorizedKeys: (endpoint) => this.authorizedKeys(endpoint),
    });
    this.connections.add(connection);
    void connection.closed.then(() => this.connections.delete(connection));
  }

  private authorizedKeys(endpoint: SshEndpoint): readonly AuthorizedKey[] {
    const cached = this.keyCache.get(endpoint.authorizedKeys);
    if (cached !== undefined) return cached;
    const keys: AuthorizedKey[] = [];
    for (const line of endpoint.authorizedKeys) {
      const parsed = parseAuthorizedKey(line);
      if (parsed.ok) keys.push(parsed.key);
      else {
        this.config.logger.warn(
          { leaseId: endpoint.leaseId, reason: parsed.reason },
          'ssh authorized key ignored',
        );
      }
    }
    this.keyCache.set(endpoint.authorizedKeys, keys);
    return keys;
  }
}

/**
 * The socket under an ssh2 connection. ssh2 keeps it in a private field
 * (`_sock`, ssh2 1.17.0, pinned exactly); the gateway needs it to time out
 * logins and to cut off a client that does not close after `end()`.
 */
function socketOf(client: Connection): Socket {
  const socket = (client as unknown as { _sock?: Socket })._sock;
  if (socket === undefined) throw new Error('ssh2 connection without _sock: ssh2 version changed?');
  return socket;
}
