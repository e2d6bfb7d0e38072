// The SSH gateway's session backend in Kubernetes mode (issue 13): a
// session is an exec into the node's workspace pod through the client's
// Exec (WebSocket, channel.k8s.io), with a TTY and resize for a shell and
// pipes for a command; SFTP is the image's sftp-server run the same way. An
// `ssh -L` channel to the pod's localhost is a port-forward into the same pod
// (pods/portforward, WebSocket), flow-controlled both ways (ws-flow.ts).
// When the workspace has no running pod the session says why and exits at
// once instead of hanging (workspace-state.ts).

import { Duplex, PassThrough } from 'node:stream';

import { Exec, PortForward } from '@kubernetes/client-node';
import type { V1Deployment, V1Pod, V1Status } from '@kubernetes/client-node';

import type {
  ExecHandle,
  ExecOptions,
  ForwardResult,
  SessionBackend,
  SessionEnv,
  SessionExit,
  ShellHandle,
  ShellOptions,
} from '../../ssh/types.js';
import { ExitLatch } from '../../ssh/exit-latch.js';
import { EXIT_STARTING, EXIT_UNAVAILABLE } from '../../ssh/session-channel.js';
import type { KubeClient } from './kube-client.js';
import type { PodTarget } from '../provisioner.js';
import { LEASE_LABEL, NAMES, WORKSPACE_LABEL, workspaceName } from './objects.js';
import { Refusal, refusedExec, refusedShell, workspaceState } from './workspace-state.js';
import { ReadGate, gateSends } from './ws-flow.js';

/** The WebSocket the client's Exec returns (ws in Node), as far as it is used here. */
interface ExecSocket {
  readonly readyState: number;
  /** The subprotocol the server chose (v5.channel.k8s.io … channel.k8s.io). */
  readonly protocol: string;
  /** Bytes given to send() and not yet written to the connection. */
  readonly bufferedAmount: number;
  close(): void;
  terminate?(): void;
  on(event: 'close', listener: () => void): void;
  pause?(): void;
  resume?(): void;
}

/** An interactive login shell: bash if the image has it. */
const LOGIN_SHELL = 'if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi';

/** The command run in the pod: the client's TERM / LANG / LC_* set by `env`. */
export function execCommand(env: SessionEnv, command: string | undefined): string[] {
  const vars = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  return ['env', ...vars, '/bin/sh', '-c', command ?? LOGIN_SHELL];
}

/** The exit status in the exec stream's final Status (channel 3). */
export function exitOfStatus(status: V1Status | undefined): SessionExit {
  if (status === undefined) return { code: 255 };
  if (status.status === 'Success') return { code: 0 };
  const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
  const code = Number(cause?.message);
  if (status.reason === 'NonZeroExitCode' && Number.isInteger(code)) return { code };
  return { code: 255 };
}

/**
 * The SFTP subsystem: the image's sftp-server where OpenSSH's packages put it
 * (Debian and Ubuntu, Fedora and RHEL, Arch, Alpine), or a word on stderr and
 * 127 when the image has none.
 */
export const SFTP_SERVER = [
  'for p in /usr/lib/openssh/sftp-server /usr/libexec/openssh/sftp-server /usr/lib/ssh/sftp-server /usr/libexec/sftp-server /usr/lib/sftp-server; do',
  '  if [ -x "$p" ]; then exec "$p"; fi;',
  'done;',
  "echo 'gpux: this workspace image has no sftp-server (install openssh-sftp-server), or copy files with kubectl cp' >&2;",
  'exit 127',
].join(' ');

/** The pod's loopback, as an `ssh -L` client names it. */
const POD_LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '::1']);

export class PodExecBackend implements SessionBackend {
  readonly sftpRoot = undefined;
  readonly sftpCommand = SFTP_SERVER;
  private readonly sockets = new Set<ExecSocket>();
  /** Open `ssh -L` forwards, cut at once by a revocation. */
  private readonly forwards = new Set<Duplex>();

  private readonly kube: KubeClient;

  /** The workspace pod of one leased node (the provisioner's NodeAccess.workspace). */
  constructor(private readonly target: PodTarget) {
    this.kube = target.kube;
  }

  async shell(options: ShellOptions): Promise<ShellHandle> {
    const pod = await this.pod();
    if (pod instanceof Refusal) return refusedShell(pod);
    const input = new PassThrough();
    // Exec sends resizes (channel 4) for an output stream that has rows and columns.
    const output = Object.assign(new PassThrough(), {
      rows: options.rows > 0 ? options.rows : 24,
      columns: options.cols > 0 ? options.cols : 80,
    });
    const exit = new ExitLatch();
    let status: V1Status | undefined;
    const socket = await this.open(
      pod,
      execCommand({ ...options.env, TERM: options.term }, options.command),
      output,
      null,
      input,
      true,
      (s) => (status = s),
    );
    socket.on('close', () => {
      output.end();
      exit.set(exitOfStatus(status));
    });
    return {
      write: (data) => {
        if (!exit.done) input.write(data);
      },
      onData: (listener) => output.on('data', (d: Buffer) => listener(Buffer.from(d))),
      resize: (cols, rows) => {
        if (exit.done || cols <= 0 || rows <= 0) return;
        output.rows = rows;
        output.columns = cols;
        output.emit('resize');
      },
      pause: () => socket.pause?.(),
      resume: () => socket.resume?.(),
      onExit: (listener) => exit.on(listener),
      hangup: () => socket.close(),
      kill: () => closeSocket(socket),
    };
  }

  async exec(options: ExecOptions): Promise<ExecHandle> {
    const pod = await this.pod();
    if (pod instanceof Refusal) return refusedExec(pod);
    const stdin = new PassThrough();
    const toPod = new PassThrough();
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const exit = new ExitLatch();
    let status: V1Status | undefined;
    let opened: ExecSocket | undefined = undefined;
    const gate = new ReadGate(() => opened);
    gate.watch(stdout);
    gate.watch(stderr);
    const socket = await this.open(
      pod,
      execCommand(options.env, options.command),
      stdout,
      stderr,
      toPod,
      false,
      (s) => (status = s),
    );
    opened = socket;
    gateSends(toPod, socket);
    // The client's EOF (`ssh host cmd </dev/null`): the client library closes
    // the whole exec on the end of stdin unless the server speaks
    // v5.channel.k8s.io, which has a close frame for stdin alone. Without it
    // the EOF is not passed on, except to the SFTP server: its client sends
    // EOF once it has every answer and then waits for the channel to close.
    stdin.pipe(toPod, { end: false });
    stdin.on('end', () => {
      if (socket.protocol === 'v5.channel.k8s.io') toPod.end();
      else if (options.command === this.sftpCommand) {
        gate.open();
        socket.close();
      }
    });
    socket.on('close', () => {
      stdout.end();
      stderr.end();
      exit.set(exitOfStatus(status));
    });
    return {
      stdin,
      stdout,
      stderr,
      onExit: (listener) => exit.on(listener),
      hangup: () => {
        // The client left: what the pod still sends is not read by anyone.
        gate.open();
        stdout.resume();
        stderr.resume();
        socket.close();
      },
      kill: () => {
        gate.open();
        return closeSocket(socket);
      },
    };
  }

  /**
   * `ssh -L local:localhost:PORT`: a port-forward to PORT of the workspace
   * pod (its own loopback, as `kubectl port-forward` reaches it). Other hosts
   * are refused: the pod's network is the customer's to reach from the pod.
   * The client's EOF ends the forward (the API's WebSocket port-forward has
   * no half-close).
   */
  async forward(host: string, port: number): Promise<ForwardResult> {
    if (!POD_LOCAL_HOSTS.has(host)) {
      return {
        ok: false,
        reason: "only the workspace pod's own ports are forwarded (ssh -L …:localhost:PORT)",
      };
    }
    if (!Number.isInteger(port) || port < 1 || port > 65_535)
      return { ok: false, reason: 'bad port' };
    const pod = await this.pod();
    if (pod instanceof Refusal) return { ok: false, reason: pod.message };
    const fromPod = new PassThrough();
    const toPod = new PassThrough();
    const errors = new PassThrough();
    let opened: ExecSocket | undefined = undefined;
    const gate = new ReadGate(() => opened);
    gate.watch(fromPod);
    try {
      opened = (await new PortForward(this.kube.config, true).portForward(
        this.target.namespace,
        pod,
        [port],
        fromPod,
        errors,
        toPod,
      )) as unknown as ExecSocket;
    } catch (err) {
      return { ok: false, reason: `port-forward failed: ${(err as Error).message}` };
    }
    const ws = opened;
    gateSends(toPod, ws);
    this.sockets.add(ws);
    const socket = Duplex.from({ readable: fromPod, writable: toPod });
    this.forwards.add(socket);
    ws.on('close', () => {
      this.sockets.delete(ws);
      fromPod.end();
    });
    // No half-close either way: once the pod's side has ended and been read, it is over.
    socket.once('end', () => socket.destroy());
    // Nothing listens on the port, or the pod went away: the channel closes.
    errors.on('data', (d: Buffer) => {
      if (d.length > 0) socket.destroy(new Error(d.toString('utf8')));
    });
    socket.on('close', () => {
      this.forwards.delete(socket);
      gate.open();
      void closeSocket(ws);
    });
    return { ok: true, socket };
  }

  /** Revocation: every exec stream of this node ends now. */
  async terminate(): Promise<void> {
    const sockets = [...this.sockets];
    this.sockets.clear();
    for (const f of this.forwards) f.destroy();
    this.forwards.clear();
    await Promise.all(sockets.map(closeSocket));
  }

  private async open(
    pod: string,
    command: string[],
    stdout: PassThrough,
    stderr: PassThrough | null,
    stdin: PassThrough,
    tty: boolean,
    onStatus: (s: V1Status) => void,
  ): Promise<ExecSocket> {
    const exec = new Exec(this.kube.config);
    const socket = (await exec.exec(
      this.target.namespace,
      pod,
      NAMES.workspaceContainer,
      command,
      stdout,
      stderr,
      stdin,
      tty,
      onStatus,
    )) as unknown as ExecSocket;
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    return socket;
  }

  private async pod(): Promise<string | Refusal> {
    const { namespace, leaseId, nodeIndex } = this.target;
    const pods = await this.kube.list<V1Pod>(
      'v1',
      'Pod',
      namespace,
      `${LEASE_LABEL}=${leaseId},${WORKSPACE_LABEL}=${nodeIndex}`,
    );
    let state = workspaceState(pods, undefined, nodeIndex);
    if (state.kind !== 'running') {
      const deployment = await this.kube.read<V1Deployment>({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: workspaceName(nodeIndex),
        namespace,
      });
      state = workspaceState(pods, deployment, nodeIndex);
    }
    switch (state.kind) {
      case 'running':
        return state.pod;
      case 'starting':
        return new Refusal(state.message, EXIT_STARTING);
      case 'unavailable':
        return new Refusal(state.message, EXIT_UNAVAILABLE);
    }
  }
}

function closeSocket(socket: ExecSocket): Promise<void> {
  // 3 = CLOSED
  if (socket.readyState === 3) return Promise.resolve();
  return new Promise((resolve) => {
    socket.on('close', () => resolve());
    // A paused WebSocket would not read the peer's answer to the close.
    socket.resume?.();
    socket.close();
    // A peer that does not answer the close handshake is cut off.
    setTimeout(() => socket.terminate?.(), 1_000).unref();
  });
}
