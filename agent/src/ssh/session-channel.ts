// One SSH `session` channel: collects env and pty requests, then runs a
// shell, a command or the SFTP subsystem on the endpoint's backend, and
// passes the exit status back. Revocation writes the message on stderr,
// sends exit status 255, ends the channel and kills the processes.

import type { ServerChannel, Session, SFTPWrapper } from 'ssh2';
import { ConfinedRoot } from './confined-root.js';
import { isAllowedEnv } from './env-allow-list.js';
import type { SftpMode } from './gateway-config.js';
import type { Logger } from './logger.js';
import { endSftpChannel } from './sftp-channel-end.js';
import { SftpSession } from './sftp-session.js';
import type { ExecHandle, SessionExit, ShellHandle, SshEndpoint } from './types.js';

/** What a channel of a connection must do when its lease is revoked or the gateway closes. */
export interface TrackedChannel {
  /** Ends the channel with `message`; resolves when its processes are gone. */
  revoke(message: string): Promise<void>;
  /** Resolves when the channel is closed (by either side, or with its connection). */
  readonly closed: Promise<void>;
  /** The connection is gone: the channel is closed without a word. */
  connectionClosed(): void;
}

export interface SessionContext {
  readonly leaseId: string;
  readonly logger: Logger;
  /** Who serves SFTP: the gateway on the backend's sftpRoot, or the backend's sftpCommand. */
  readonly sftp: SftpMode;
  /** The endpoint as the directory has it now; undefined when the login no longer leads to this lease. */
  currentEndpoint(): Promise<SshEndpoint | undefined>;
}

/** sysexits.h: what a session of an endpoint that is not ready exits with. */
export const EXIT_STARTING = 75; // EX_TEMPFAIL: try again later
export const EXIT_UNAVAILABLE = 69; // EX_UNAVAILABLE
export const EXIT_REVOKED = 255;
const EXIT_START_FAILED = 1;

interface PtyRequest {
  term: string;
  cols: number;
  rows: number;
}

type Accept = (() => ServerChannel) | undefined;
type Reply = (() => void) | undefined;

export class SessionChannel implements TrackedChannel {
  readonly closed: Promise<void>;
  private resolveClosed!: () => void;
  private isClosed = false;
  private requested = false;
  private revoked = false;
  private exited = false;
  /** An exit status was sent (or is about to be): nothing more goes to the client. */
  private ending = false;
  private pty: PtyRequest | undefined;
  private readonly env: Record<string, string> = {};
  private channel: ServerChannel | undefined;
  private sftp: { wrapper: SFTPWrapper; session: SftpSession } | undefined;
  private shellHandle: ShellHandle | undefined;
  private process: ShellHandle | ExecHandle | undefined;
  private starting: Promise<void> = Promise.resolve();

  constructor(
    session: Session,
    private readonly ctx: SessionContext,
  ) {
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
    session.on('env', (accept: Reply, reject: Reply, info: { key: string; val: string }) => {
      if (this.requested || !isAllowedEnv(info.key, info.val)) return reject?.();
      this.env[info.key] = info.val;
      accept?.();
    });
    session.on('pty', (accept: Reply, reject: Reply, info: PtyRequest) => {
      if (this.requested) return reject?.();
      this.pty = { term: info.term, cols: info.cols, rows: info.rows };
      accept?.();
    });
    session.on('window-change', (accept: Reply, reject: Reply, info: PtyRequest) => {
      if (this.pty === undefined) return reject?.();
      this.pty.cols = info.cols;
      this.pty.rows = info.rows;
      this.shellHandle?.resize(info.cols, info.rows);
      accept?.();
    });
    // Shell and exec are accepted at once, before the endpoint is asked:
    // ssh2 drops a session whose client sends EOF (`ssh host cmd </dev/null`)
    // before the request was answered. A session that cannot run then ends
    // with a message and an exit status instead.
    session.on('shell', (accept: Accept, reject: Reply) => {
      const channel = this.begin(accept, reject);
      if (channel !== undefined) this.started(this.startProcess(channel, undefined));
    });
    session.on('exec', (accept: Accept, reject: Reply, info: { command: string }) => {
      const channel = this.begin(accept, reject);
      if (channel !== undefined) this.started(this.startProcess(channel, info.command));
    });
    if (ctx.sftp === 'gateway') {
      session.on('sftp', (accept: () => SFTPWrapper, reject: Reply) => {
        if (this.requested || this.revoked) return reject?.();
        this.requested = true;
        this.started(this.startSftp(accept()));
      });
    } else {
      // Without an 'sftp' listener ssh2 hands the subsystem over as a plain
      // channel: its bytes go to and from the backend's SFTP server process.
      session.on('subsystem', (accept: Accept, reject: Reply, info: { name: string }) => {
        if (info.name !== 'sftp') return reject?.();
        const channel = this.begin(accept, reject);
        if (channel !== undefined) this.started(this.startProcess(channel, undefined, true));
      });
    }
    session.on('close', () => this.markClosed());
  }

  connectionClosed(): void {
    this.markClosed();
  }

  async revoke(message: string): Promise<void> {
    if (!this.revoked) {
      this.revoked = true;
      if (!this.isClosed) this.endWith(message, EXIT_REVOKED);
    }
    await this.starting;
    await this.process?.kill();
  }

  /** One shell, exec or subsystem per session, as RFC 4254 says. */
  private begin(accept: Accept, reject: Reply): ServerChannel | undefined {
    if (this.requested || this.revoked) {
      reject?.();
      return undefined;
    }
    this.requested = true;
    this.channel = accept?.();
    // A write after the client closed must not become an uncaught error.
    this.channel?.on('error', () => undefined);
    this.channel?.stderr.on('error', () => undefined);
    return this.channel;
  }

  private started(start: Promise<void>): void {
    this.starting = start.catch((err: unknown) => {
      this.ctx.logger.error({ err, leaseId: this.ctx.leaseId }, 'ssh session failed to start');
    });
  }

  /** The endpoint if it is ready; otherwise the session is ended with why. */
  private async readyEndpoint(): Promise<ReadyEndpoint | undefined> {
    const endpoint = await this.lookUp();
    if (this.isClosed || this.revoked) return undefined;
    if (isReady(endpoint)) return endpoint;
    const ending = notReady(endpoint);
    this.endWith(ending.message, ending.code);
    return undefined;
  }

  /** The endpoint now; a failed lookup is logged and counts as no access. */
  private async lookUp(): Promise<SshEndpoint | undefined> {
    try {
      return await this.ctx.currentEndpoint();
    } catch (err) {
      this.ctx.logger.error({ err, leaseId: this.ctx.leaseId }, 'ssh endpoint lookup failed');
      return undefined;
    }
  }

  private async startProcess(
    channel: ServerChannel,
    given: string | undefined,
    sftp = false,
  ): Promise<void> {
    const endpoint = await this.readyEndpoint();
    if (endpoint === undefined) return;
    const command = sftp ? endpoint.backend.sftpCommand : given;
    if (sftp && command === undefined) {
      this.endWith('gpux: no SFTP on this node', EXIT_START_FAILED);
      return;
    }
    const env = { ...this.env };
    let handle: ShellHandle | ExecHandle;
    try {
      handle =
        this.pty === undefined || sftp
          ? await endpoint.backend.exec(command === undefined ? { env } : { env, command })
          : await endpoint.backend.shell({
              ...this.pty,
              env,
              ...(command === undefined ? {} : { command }),
            });
    } catch (err) {
      this.ctx.logger.error(
        { err, leaseId: this.ctx.leaseId },
        'ssh backend could not start a session',
      );
      if (!this.isClosed && !this.revoked)
        this.endWith('gpux: could not start the session', EXIT_START_FAILED);
      return;
    }
    this.process = handle;
    if (this.isClosed || this.revoked) {
      // The client left or the lease was revoked while it started: revoke() kills it.
      if (this.isClosed && !this.revoked) void handle.kill();
      return;
    }
    if ('stdin' in handle) this.wireExec(channel, handle);
    else this.wireShell(channel, handle);
    this.ctx.logger.info(
      { leaseId: this.ctx.leaseId, pty: this.pty !== undefined, exec: command !== undefined, sftp },
      sftp ? 'ssh sftp session started' : 'ssh session started',
    );
  }

  private wireShell(channel: ServerChannel, handle: ShellHandle): void {
    this.shellHandle = handle;
    if (this.pty !== undefined) handle.resize(this.pty.cols, this.pty.rows);
    let paused = false;
    handle.onData((data) => {
      if (this.isClosed || this.revoked) return;
      if (!channel.write(data) && !paused) {
        paused = true;
        handle.pause();
        channel.once('drain', () => {
          paused = false;
          handle.resume();
        });
      }
    });
    channel.on('data', (data: Buffer) => handle.write(data));
    handle.onExit((exit) => this.finish(exit));
  }

  private wireExec(channel: ServerChannel, handle: ExecHandle): void {
    handle.stdin.on('error', () => undefined); // EPIPE once the process is gone
    channel.pipe(handle.stdin);
    handle.stdout.pipe(channel, { end: false });
    handle.stderr.pipe(channel.stderr, { end: false });
    handle.onExit((exit) => this.finish(exit));
  }

  // Accepted at once, like shell and exec (ssh2 drops the client's INIT
  // otherwise); a session that cannot be served is ended with a message.
  private async startSftp(wrapper: SFTPWrapper): Promise<void> {
    const root = this.sftpRoot();
    const session = new SftpSession(
      wrapper,
      root.then((r) => ('dir' in r ? r.dir : Promise.reject(new Error(r.message)))),
      this.ctx.logger,
    );
    this.sftp = { wrapper, session };
    // The client's EOF ends the subsystem once the requests before it are
    // answered; ssh2 leaves closing our side of an SFTP channel to us.
    wrapper.on('end', () => {
      void session.drained().then(() => {
        if (this.ending) return;
        this.ending = true;
        endSftpChannel(wrapper, 0);
      });
    });
    wrapper.on('close', () => {
      wrapper.end();
      this.markClosed();
    });
    const ready = await root;
    if ('message' in ready) {
      if (!this.revoked && !this.isClosed) this.endWith(ready.message, ready.code);
      return;
    }
    this.ctx.logger.info({ leaseId: this.ctx.leaseId }, 'ssh sftp session started');
  }

  private async sftpRoot(): Promise<{ dir: ConfinedRoot } | { message: string; code: number }> {
    const endpoint = await this.lookUp();
    if (!isReady(endpoint)) return notReady(endpoint);
    const dir = endpoint.backend.sftpRoot;
    if (dir === undefined)
      return { message: 'gpux: no SFTP on this node', code: EXIT_START_FAILED };
    try {
      return { dir: await ConfinedRoot.open(dir) };
    } catch (err) {
      this.ctx.logger.error({ err, leaseId: this.ctx.leaseId, dir }, 'ssh sftp root unusable');
      return { message: 'gpux: could not start SFTP', code: EXIT_START_FAILED };
    }
  }

  /** The process exited: its status goes to the client, then the channel closes. */
  private finish(exit: SessionExit): void {
    this.exited = true;
    const channel = this.channel;
    if (channel === undefined || this.isClosed || this.ending) return;
    this.ending = true;
    // stderr is a stream of its own: let it flush before the status and close.
    channel.stderr.end(() => {
      if (exit.signal === undefined) channel.exit(exit.code);
      else channel.exit(exit.signal, false, '');
      channel.end();
    });
  }

  private endWith(message: string, code: number): void {
    if (this.ending) return;
    this.ending = true;
    if (this.sftp !== undefined) {
      void this.sftp.session.close();
      endSftpChannel(this.sftp.wrapper, code, message);
      return;
    }
    const channel = this.channel;
    if (channel === undefined) return;
    const eol = this.pty === undefined ? '\n' : '\r\n';
    channel.stderr.write(`${message}${eol}`);
    channel.exit(code);
    channel.end();
  }

  private markClosed(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    if (this.sftp !== undefined) void this.sftp.session.close();
    // The client went away while the process ran: hang up as sshd would.
    if (this.process !== undefined && !this.exited && !this.revoked) this.process.hangup();
    this.resolveClosed();
  }
}

type ReadyEndpoint = Extract<SshEndpoint, { state: 'ready' }>;

function isReady(endpoint: SshEndpoint | undefined): endpoint is ReadyEndpoint {
  return endpoint?.state === 'ready';
}

/** Why a session on an endpoint that is not ready ends at once. */
function notReady(endpoint: Exclude<SshEndpoint, ReadyEndpoint> | undefined): {
  message: string;
  code: number;
} {
  if (endpoint === undefined) {
    return { message: 'gpux: this login no longer has access to this node', code: EXIT_REVOKED };
  }
  switch (endpoint.state) {
    case 'starting':
      return {
        message: endpoint.message ?? 'gpux: this node is still being set up; try again shortly',
        code: EXIT_STARTING,
      };
    case 'unavailable':
      return {
        message: endpoint.message ?? 'gpux: this node is unavailable',
        code: EXIT_UNAVAILABLE,
      };
  }
}
