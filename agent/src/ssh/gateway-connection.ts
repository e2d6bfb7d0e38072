// One client connection: public-key authentication against the endpoint
// the login name stands for, then its channels (sessions and forwards),
// capped, until the client leaves or the lease is revoked.

import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import type { AuthContext, ClientInfo, Connection } from 'ssh2';
import { decidePublicKey } from './authorized-keys.js';
import type { AuthorizedKey } from './authorized-keys.js';
import { ForwardChannel } from './forward-channel.js';
import type { SshGatewayConfig } from './gateway-config.js';
import { SessionChannel } from './session-channel.js';
import type { SessionContext, TrackedChannel } from './session-channel.js';
import type { SshEndpoint } from './types.js';

/** What a connection needs from its gateway. */
export interface ConnectionHost {
  readonly config: SshGatewayConfig;
  isRevoked(leaseId: string): boolean;
  /** The endpoint's authorized keys, parsed (and their problems logged) once per list. */
  authorizedKeys(endpoint: SshEndpoint): readonly AuthorizedKey[];
}

/** How long an ended connection may take to close before its socket is destroyed. */
const END_FALLBACK_MS = 1_000;

export class GatewayConnection {
  /** Set when authenticated. */
  leaseId: string | undefined;
  readonly closed: Promise<void>;
  private username: string | undefined;
  private nodeIndex: number | undefined;
  private resolveClosed!: () => void;
  private readonly channels = new Set<TrackedChannel>();
  private openingChannels = 0;
  private authFailures = 0;
  private ending = false;
  private isClosed = false;
  private readonly log: { remote: string };

  constructor(
    private readonly client: Connection,
    info: ClientInfo,
    readonly socket: Socket,
    private readonly host: ConnectionHost,
  ) {
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
    this.log = { remote: `${info.ip}:${info.port}` };
    client.on('authentication', (ctx) => void this.authenticate(ctx));
    client.on('ready', () => {
      this.host.config.logger.info(
        { ...this.log, leaseId: this.leaseId, node: this.nodeIndex, user: this.username },
        'ssh login',
      );
    });
    client.on('session', (accept, reject) => {
      if (!this.mayOpenChannel()) return reject();
      this.track(new SessionChannel(accept(), this.sessionContext()));
    });
    client.on('tcpip', (accept, reject, info) => {
      if (!this.mayOpenChannel()) return reject();
      this.openingChannels++;
      void this.openForward(info.destIP, info.destPort)
        .then((socket) => {
          if (socket === undefined || this.ending || this.isClosed) {
            socket?.destroy();
            return reject();
          }
          this.track(new ForwardChannel(accept(), socket));
        })
        .finally(() => this.openingChannels--);
    });
    client.on('error', (err) => {
      this.host.config.logger.debug({ ...this.log, err }, 'ssh connection error');
    });
    client.on('close', () => {
      this.isClosed = true;
      for (const channel of this.channels) channel.connectionClosed();
      this.resolveClosed();
    });
  }

  get authenticated(): boolean {
    return this.leaseId !== undefined;
  }

  /**
   * Revocation of this connection's lease: every channel gets the message,
   * exit status 255 and its processes killed; the connection is ended once
   * the channels closed (ending it at once can lose the message) or after
   * the fallback. Resolves when the processes are gone and the connection
   * is closed.
   */
  async revoke(message: string): Promise<void> {
    this.ending = true;
    const channels = [...this.channels];
    const kills = channels.map((c) => c.revoke(message));
    await Promise.race([
      Promise.all(channels.map((c) => c.closed)),
      delay(this.host.config.limits.revokeCloseFallbackMs),
    ]);
    this.end();
    await Promise.all([...kills, this.closed]);
  }

  /** Ends the connection; a client that does not close its side is cut off. */
  end(): void {
    this.ending = true;
    if (this.isClosed) return;
    this.client.end();
    setTimeout(() => this.socket.destroy(), END_FALLBACK_MS).unref();
  }

  private async authenticate(ctx: AuthContext): Promise<void> {
    const logger = this.host.config.logger;
    if (ctx.method !== 'publickey') {
      // `none` is how every client starts; it is not a failed attempt.
      return this.refuse(ctx, ctx.method !== 'none');
    }
    let endpoint: SshEndpoint | undefined;
    try {
      endpoint = await this.host.config.directory.lookup(ctx.username);
    } catch (err) {
      logger.error({ ...this.log, err, user: ctx.username }, 'ssh endpoint lookup failed');
    }
    if (this.isClosed) return;
    if (endpoint === undefined || this.host.isRevoked(endpoint.leaseId)) {
      logger.info(
        { ...this.log, user: ctx.username },
        'ssh login refused: unknown user or revoked lease',
      );
      return this.refuse(ctx, true);
    }
    const decision = decidePublicKey(this.host.authorizedKeys(endpoint), {
      algo: ctx.key.algo,
      data: ctx.key.data,
      signature: ctx.signature,
      blob: ctx.blob,
      hashAlgo: ctx.hashAlgo,
    });
    switch (decision.outcome) {
      case 'query-ok':
        return ctx.accept();
      case 'accept':
        this.leaseId = endpoint.leaseId;
        this.username = ctx.username;
        this.nodeIndex = endpoint.nodeIndex;
        logger.debug(
          { ...this.log, leaseId: endpoint.leaseId, key: decision.key.fingerprint },
          'ssh public key accepted',
        );
        return ctx.accept();
      case 'reject':
        logger.info(
          { ...this.log, leaseId: endpoint.leaseId, user: ctx.username, reason: decision.reason },
          'ssh public key refused',
        );
        return this.refuse(ctx, true);
    }
  }

  private refuse(ctx: AuthContext, counts: boolean): void {
    if (counts) this.authFailures++;
    ctx.reject(['publickey']);
    if (this.authFailures >= this.host.config.limits.maxAuthFailures) {
      this.host.config.logger.warn(
        { ...this.log },
        'ssh connection closed: too many failed logins',
      );
      this.end();
    }
  }

  private mayOpenChannel(): boolean {
    const leaseId = this.leaseId;
    if (leaseId === undefined || this.ending || this.host.isRevoked(leaseId)) return false;
    const open = this.channels.size + this.openingChannels;
    if (open < this.host.config.limits.maxChannelsPerConnection) return true;
    this.host.config.logger.warn(
      { ...this.log, leaseId },
      'ssh channel refused: too many channels',
    );
    return false;
  }

  private track(channel: TrackedChannel): void {
    this.channels.add(channel);
    void channel.closed.then(() => this.channels.delete(channel));
  }

  private sessionContext(): SessionContext {
    return {
      leaseId: this.leaseId as string,
      logger: this.host.config.logger,
      sftp: this.host.config.sftp,
      currentEndpoint: () => this.currentEndpoint(),
    };
  }

  /** The endpoint as the directory has it now, if it still is this connection's lease. */
  private async currentEndpoint(): Promise<SshEndpoint | undefined> {
    if (this.username === undefined || this.leaseId === undefined) return undefined;
    if (this.host.isRevoked(this.leaseId)) return undefined;
    const endpoint = await this.host.config.directory.lookup(this.username);
    if (endpoint?.leaseId !== this.leaseId || this.host.isRevoked(this.leaseId)) return undefined;
    return endpoint;
  }

  private async openForward(host: string, port: number): Promise<Duplex | undefined> {
    const logger = this.host.config.logger;
    try {
      const endpoint = await this.currentEndpoint();
      if (endpoint?.state !== 'ready') return undefined;
      const result = await endpoint.backend.forward(host, port);
      if (result.ok) return result.socket;
      logger.info(
        { ...this.log, leaseId: this.leaseId, host, port, reason: result.reason },
        'ssh forward refused',
      );
    } catch (err) {
      logger.error({ ...this.log, err, leaseId: this.leaseId, host, port }, 'ssh forward failed');
    }
    return undefined;
  }
}
