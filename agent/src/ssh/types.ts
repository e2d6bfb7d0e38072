// The gateway's two seams: an EndpointDirectory says who may log in where,
// and a SessionBackend runs what a login asks for. The simulated
// provisioner's backend is LocalWorkspaceBackend; a Kubernetes provisioner
// plugs one that execs into the lease's pod.

import type { Duplex, Readable, Writable } from 'node:stream';

export type EndpointState = 'ready' | 'starting' | 'unavailable';

interface EndpointBase {
  readonly leaseId: string;
  readonly nodeIndex: number;
  /**
   * OpenSSH public key lines (`ssh-ed25519 AAAA… comment`): exactly the keys
   * the lease's account had when the lease was provisioned (D32). Only
   * ssh-ed25519 and ssh-rsa of 2048 bits or more are honoured.
   */
  readonly authorizedKeys: readonly string[];
  readonly message?: string;
}

/**
 * One node of one lease, as the provisioner set it up. `starting` /
 * `unavailable`: a login succeeds, every session prints `message` and
 * exits; no session runs, so such an endpoint needs no backend.
 */
export type SshEndpoint = EndpointBase &
  (
    | { readonly state: 'ready'; readonly backend: SessionBackend }
    | {
        readonly state: 'starting' | 'unavailable';
        readonly backend?: SessionBackend | undefined;
      }
  );

export interface EndpointDirectory {
  /**
   * The endpoint a login name stands for, or undefined (the login fails).
   * Asked at every authentication attempt and again at every session
   * request, so a state change reaches open connections too.
   */
  lookup(username: string): SshEndpoint | undefined | Promise<SshEndpoint | undefined>;
}

/** How a session's process ended: an exit status, or the name of the signal (no `SIG`). */
export type SessionExit =
  | { readonly code: number; readonly signal?: undefined }
  | { readonly code?: undefined; readonly signal: string };

/** Session variables the gateway passes on: TERM, LANG, LC_* (see env-allow-list.ts). */
export type SessionEnv = Readonly<Record<string, string>>;

export interface ShellOptions {
  readonly term: string;
  readonly cols: number;
  readonly rows: number;
  readonly env: SessionEnv;
  /** Run this command in the terminal instead of an interactive login shell (`ssh -t host cmd`). */
  readonly command?: string;
}

/** A process on a pseudo-terminal (node-pty-like). */
export interface ShellHandle {
  write(data: Buffer): void;
  onData(listener: (data: Buffer) => void): void;
  resize(cols: number, rows: number): void;
  /** Flow control: the SSH channel's window is full / has room again. */
  pause(): void;
  resume(): void;
  /** Called once; called at once for a listener added after the exit. */
  onExit(listener: (exit: SessionExit) => void): void;
  /** The client went away while the process ran: what closing a terminal does (SIGHUP). */
  hangup(): void;
  /** Revocation: end every process of the session (its process groups); resolves when they are gone. */
  kill(): Promise<void>;
}

export interface ExecOptions {
  readonly env: SessionEnv;
  /** Undefined: a login shell reading commands from stdin (`ssh -T host`). */
  readonly command?: string;
}

/** A process on pipes (child_process-like). */
export interface ExecHandle {
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** After the process exited and stdout and stderr ended; called once. */
  onExit(listener: (exit: SessionExit) => void): void;
  /** The client went away while the process ran: its pipes are closed, as sshd does. */
  hangup(): void;
  /** Revocation: end every process of the session (its process groups); resolves when they are gone. */
  kill(): Promise<void>;
}

export type ForwardResult =
  { readonly ok: true; readonly socket: Duplex } | { readonly ok: false; readonly reason: string };

export interface SessionBackend {
  /** Starts a process on a pseudo-terminal; a rejection fails the session request. */
  shell(options: ShellOptions): Promise<ShellHandle>;
  /** Starts a process on pipes; a rejection fails the session request. */
  exec(options: ExecOptions): Promise<ExecHandle>;
  /**
   * The directory the gateway's own SFTP server is confined to (symlinks
   * included), for a gateway whose `sftp` is 'gateway'; undefined: no SFTP.
   */
  readonly sftpRoot: string | undefined;
  /**
   * For a gateway whose `sftp` is 'backend': the command that serves SFTP on
   * its stdin and stdout where the node's sessions run (the image's
   * sftp-server); the gateway passes the subsystem's bytes through. Undefined: no SFTP.
   */
  readonly sftpCommand?: string | undefined;
  /** A connected socket to host:port for `ssh -L`, or a refusal (the channel open fails). */
  forward(host: string, port: number): Promise<ForwardResult>;
  /**
   * Revocation: ends whatever this node's sessions left running (processes
   * of sessions that already ended, exec streams, forwards); the gateway has
   * closed the sessions themselves. Resolves when they are gone.
   */
  terminate(): Promise<void>;
}
