// The simulated provisioner's session backend: shells and commands run as
// the agent's own user on this host, in the lease's workspace directory
// (cwd and HOME). Each one leads a login session of its own (node-pty and
// `spawn({detached: true})` call setsid), which is how its processes are
// found again: to kill them on revocation and to tell which ports the
// lease listens on (process-tree.ts, tcp-listeners.ts).
//
// Not a sandbox: the processes can read whatever the agent's user can, and
// a process that calls setsid itself (a daemon, a tmux server) leaves the
// sessions tracked here. The Kubernetes backend isolates leases for real.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { constants } from 'node:os';
import * as pty from 'node-pty';
import { killSessions, membersOf, readProcesses, sessionOf, signalGroup } from './process-tree.js';
import { ExitLatch } from './exit-latch.js';
import { SILENT_LOGGER } from './logger.js';
import type { Logger } from './logger.js';
import type { ProcStat, SessionRef } from './process-tree.js';
import { loopbackAddressOf, readTcpListeners, socketInodesOf } from './tcp-listeners.js';
import type {
  ExecHandle,
  ExecOptions,
  ForwardResult,
  SessionBackend,
  SessionEnv,
  ShellHandle,
  ShellOptions,
} from './types.js';

export interface LocalWorkspaceBackendOptions {
  /** The shell that runs logins and commands (`shell -l`, `shell -c command`). Default /bin/bash. */
  readonly shell?: string;
  /** How long SIGHUP gets before SIGKILL when sessions are killed. Default 500 ms. */
  readonly killGraceMs?: number;
  /** Where a hangup that could not be delivered is told. */
  readonly logger?: Logger;
}

// A client without a terminal of its own (`ssh -tt` from a script) asks
// for 0×0; a pty needs a size.
const DEFAULT_COLS = 80;
const DEFAULT_ROWS = 24;

function orDefault(n: number, fallback: number): number {
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '::1']);

const SIGNAL_NAMES = new Map<number, string>(
  Object.entries(constants.signals).map(([name, n]) => [n, name.replace(/^SIG/, '')]),
);

export class LocalWorkspaceBackend implements SessionBackend {
  readonly sftpRoot: string;
  private readonly shellPath: string;
  private readonly killGraceMs: number;
  private readonly logger: Logger;
  private sessions: SessionRef[] = [];

  /**
   * `env` is the whole environment of the lease's processes (plus the
   * client's LANG, LC_* and TERM, and HOME = `dir`): give it PATH and the
   * like, never the agent's own environment, which holds its token.
   */
  constructor(
    readonly dir: string,
    private readonly env: Readonly<Record<string, string>>,
    options: LocalWorkspaceBackendOptions = {},
  ) {
    this.sftpRoot = dir;
    this.shellPath = options.shell ?? '/bin/bash';
    this.killGraceMs = options.killGraceMs ?? 500;
    this.logger = options.logger ?? SILENT_LOGGER;
  }

  shell(options: ShellOptions): Promise<ShellHandle> {
    const args = options.command === undefined ? ['-l'] : ['-c', options.command];
    const term = pty.spawn(this.shellPath, args, {
      name: options.term,
      cols: orDefault(options.cols, DEFAULT_COLS),
      rows: orDefault(options.rows, DEFAULT_ROWS),
      cwd: this.dir,
      env: this.sessionEnv({ ...options.env, TERM: options.term }),
      // Buffers, not strings: the stream is passed on byte for byte.
      encoding: null,
    });
    const session = this.track(term.pid);
    const exit = new ExitLatch();
    term.onExit(({ exitCode, signal }) => {
      exit.set(
        signal ? { signal: SIGNAL_NAMES.get(signal) ?? String(signal) } : { code: exitCode },
      );
    });
    return Promise.resolve({
      write: (data) => {
        if (!exit.done) term.write(data);
      },
      onData: (listener) => {
        // With `encoding: null` node-pty emits Buffers; its typings say string.
        term.onData((data: string | Buffer) => listener(Buffer.from(data)));
      },
      resize: (cols, rows) => {
        if (!exit.done) term.resize(orDefault(cols, DEFAULT_COLS), orDefault(rows, DEFAULT_ROWS));
      },
      pause: () => term.pause(),
      resume: () => term.resume(),
      onExit: (listener) => exit.on(listener),
      hangup: () => {
        if (exit.done) return;
        try {
          signalGroup(term.pid, 'SIGHUP');
        } catch (err) {
          // Its processes run on; revocation (terminate) tries again and says so.
          this.logger.warn({ err, pgid: term.pid, dir: this.dir }, 'ssh hangup not delivered');
        }
      },
      kill: () => killSessions([session], { graceMs: this.killGraceMs }),
    });
  }

  async exec(options: ExecOptions): Promise<ExecHandle> {
    const args = options.command === undefined ? ['-l'] : ['-c', options.command];
    const child = spawn(this.shellPath, args, {
      cwd: this.dir,
      env: this.sessionEnv(options.env),
      detached: true, // setsid: the command leads a session of its own
    });
    await once(child, 'spawn'); // rejects with the spawn error (ENOENT, EACCES)
    const session = this.track(child.pid as number);
    const exit = new ExitLatch();
    child.once('close', (code, signal) => {
      exit.set(signal !== null ? { signal: signal.replace(/^SIG/, '') } : { code: code ?? 255 });
    });
    child.on('error', () => undefined); // a failed kill(2); the exit still comes
    const { stdin, stdout, stderr } = child;
    // A client that goes away mid-write must not crash the agent.
    stdin.on('error', () => undefined);
    return {
      stdin,
      stdout,
      stderr,
      onExit: (listener) => exit.on(listener),
      hangup: () => {
        stdin.destroy();
        stdout.destroy();
        stderr.destroy();
      },
      kill: () => killSessions([session], { graceMs: this.killGraceMs }),
    };
  }

  async forward(host: string, port: number): Promise<ForwardResult> {
    if (!LOCAL_HOSTS.has(host)) {
      return { ok: false, reason: 'only localhost ports of the lease can be forwarded' };
    }
    if (!Number.isInteger(port) || port < 1 || port > 65_535) {
      return { ok: false, reason: 'bad port' };
    }
    const members = await this.liveMembers();
    const inodes = await socketInodesOf(members.map((p) => p.pid));
    const listener = (await readTcpListeners()).find(
      (l) => l.port === port && inodes.has(l.inode) && loopbackAddressOf(l) !== undefined,
    );
    const address = listener === undefined ? undefined : loopbackAddressOf(listener);
    if (address === undefined) {
      return { ok: false, reason: `no process of this lease listens on port ${port}` };
    }
    const socket = connect({ host: address, port });
    try {
      await once(socket, 'connect');
    } catch (err) {
      socket.destroy();
      return { ok: false, reason: `connect failed: ${(err as Error).message}` };
    }
    return { ok: true, socket };
  }

  /**
   * Ends every process any session of this workspace started, including
   * those left running after their session ended (`nohup … &`). For the
   * provisioner, when the lease is revoked.
   */
  async terminate(): Promise<void> {
    const sessions = this.sessions;
    this.sessions = [];
    await killSessions(sessions, { graceMs: this.killGraceMs });
  }

  /** Live processes of this workspace's sessions; sessions with none left are forgotten. */
  async liveMembers(): Promise<ProcStat[]> {
    const { members, gone } = membersOf(await readProcesses(), this.sessions);
    if (gone.length > 0) this.sessions = this.sessions.filter((s) => !gone.includes(s));
    return members;
  }

  private track(pid: number): SessionRef {
    const session = sessionOf(pid);
    this.sessions.push(session);
    return session;
  }

  private sessionEnv(client: SessionEnv): Record<string, string> {
    return { ...this.env, ...client, HOME: this.dir, PWD: this.dir };
  }
}
