// pods/exec over WebSocket, the protocol @kubernetes/client-node's Exec
// speaks (v4.channel.k8s.io / v5.channel.k8s.io): every binary message
// starts with its channel, 0 stdin, 1 stdout, 2 stderr, 3 error (a Status
// JSON ending the session, with the exit code), 4 resize ({Width, Height}),
// and in v5 255 closes a stream (stdin end). The session runs a local
// process, under a pty when tty=true.

import { spawn } from 'node:child_process';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import type { Duplex } from 'node:stream';

import * as pty from 'node-pty';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';

import type { KObject } from './store.js';

export interface ExecRequest {
  readonly pod: KObject;
  readonly container: string;
  readonly command: readonly string[];
  readonly tty: boolean;
}

/** A running exec session's process. */
export interface ExecProcess {
  onOutput(cb: (stream: 1 | 2, data: Buffer) => void): void;
  /** Called once output is drained and the process is gone. */
  onExit(cb: (code: number) => void): void;
  write(data: Buffer): void;
  endInput(): void;
  resize(cols: number, rows: number): void;
  kill(): void;
}

export type ExecRunner = (req: ExecRequest) => ExecProcess;

function containerEnv(req: ExecRequest): Record<string, string> {
  const spec = req.pod['spec'] as
    { containers?: { name: string; env?: { name: string; value?: string }[] }[] } | undefined;
  const env: Record<string, string> = {
    PATH: process.env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: tmpdir(),
    HOSTNAME: req.pod.metadata.name ?? '',
  };
  const c = spec?.containers?.find((x) => x.name === req.container);
  for (const e of c?.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
  if (req.tty) env['TERM'] = 'xterm';
  return env;
}

/** Runs the command on this machine: a child process, or a pty for tty sessions. */
export const localRunner: ExecRunner = (req) => {
  const [file, ...args] = req.command;
  if (file === undefined) throw new Error('no command');
  const env = containerEnv(req);
  if (req.tty) {
    const term = pty.spawn(file, args, { cols: 80, rows: 24, cwd: tmpdir(), env, name: 'xterm' });
    let output: ((s: 1 | 2, d: Buffer) => void) | undefined;
    const early: Buffer[] = [];
    term.onData((d) => {
      const b = Buffer.from(d, 'utf8');
      if (output === undefined) early.push(b);
      else output(1, b);
    });
    let exit: ((code: number) => void) | undefined;
    let exited: number | undefined;
    term.onExit(({ exitCode }) => {
      exited = exitCode;
      exit?.(exitCode);
    });
    return {
      onOutput(cb) {
        output = cb;
        for (const b of early.splice(0)) cb(1, b);
      },
      onExit(cb) {
        exit = cb;
        if (exited !== undefined) cb(exited);
      },
      write: (data) => term.write(data.toString('utf8')),
      endInput: () => term.write('\x04'),
      resize: (cols, rows) => term.resize(cols, rows),
      kill: () => {
        try {
          process.kill(-term.pid, 'SIGHUP');
        } catch {
          term.kill();
        }
      },
    };
  }
  const child = spawn(file, args, { cwd: tmpdir(), env, detached: true, stdio: 'pipe' });
  let failed: number | undefined;
  child.on('error', () => {
    failed = 126;
  });
  return {
    onOutput(cb) {
      child.stdout.on('data', (d: Buffer) => cb(1, d));
      child.stderr.on('data', (d: Buffer) => cb(2, d));
    },
    onExit(cb) {
      child.on('close', (code, signal) => cb(failed ?? code ?? (signal === null ? 1 : 128 + 9)));
    },
    write: (data) => {
      child.stdin.write(data);
    },
    endInput: () => {
      child.stdin.end();
    },
    resize: () => undefined,
    kill: () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    },
  };
};

/** What an API server of 1.30 or later speaks, best first; one before 1.30 has no v5. */
export const EXEC_PROTOCOLS: readonly string[] = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
const servers = new Map<string, WebSocketServer>();

function serverFor(protocols: readonly string[]): WebSocketServer {
  const key = protocols.join(',');
  let wss = servers.get(key);
  if (wss === undefined) {
    wss = new WebSocketServer({
      noServer: true,
      handleProtocols: (offered) => protocols.find((p) => offered.has(p)) ?? false,
    });
    servers.set(key, wss);
  }
  return wss;
}

export function exitStatus(command: readonly string[], code: number): object {
  if (code === 0) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command [${command.join(' ')}], exit code ${code}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
  };
}

export function handleExecUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  session: ExecRequest & {
    stdin: boolean;
    runner?: ExecRunner;
    /** The subprotocols spoken, best first (default EXEC_PROTOCOLS). */
    protocols?: readonly string[];
    /** Ends every open session (on stop). */
    /** Open sessions: their end (close the socket), by the pod's uid and its process's kill. */
    sessions: Map<() => void, { podUid: string; kill: () => void }>;
  },
): void {
  serverFor(session.protocols ?? EXEC_PROTOCOLS).handleUpgrade(
    req,
    socket,
    head,
    (ws: WebSocket) => {
      const send = (channel: number, data: Buffer): void => {
        if (ws.readyState === ws.OPEN) ws.send(Buffer.concat([Buffer.from([channel]), data]));
      };
      let proc: ExecProcess;
      try {
        proc = (session.runner ?? localRunner)(session);
      } catch (err) {
        send(
          3,
          Buffer.from(
            JSON.stringify({
              metadata: {},
              status: 'Failure',
              message: String(err),
              reason: 'InternalError',
            }),
          ),
        );
        ws.close(1000);
        return;
      }
      const end = (): void => {
        proc.kill();
        ws.terminate();
      };
      session.sessions.set(end, {
        podUid: session.pod.metadata.uid ?? '',
        kill: () => proc.kill(),
      });
      proc.onOutput((stream, data) => send(session.tty ? 1 : stream, data));
      proc.onExit((code) => {
        session.sessions.delete(end);
        send(3, Buffer.from(JSON.stringify(exitStatus(session.command, code))));
        ws.close(1000);
      });
      ws.on('message', (data: Buffer, isBinary: boolean) => {
        const buf = isBinary ? data : Buffer.from(data.toString(), 'utf8');
        const channel = buf[0];
        const payload = buf.subarray(1);
        if (channel === 0 && session.stdin) proc.write(payload);
        else if (channel === 4) {
          try {
            const size = JSON.parse(payload.toString('utf8')) as Record<string, unknown>;
            const cols = Number(size['Width'] ?? size['width']);
            const rows = Number(size['Height'] ?? size['height']);
            if (cols > 0 && rows > 0) proc.resize(cols, rows);
          } catch {
            // a malformed resize is ignored, as the kubelet does
          }
        } else if (channel === 255 && payload[0] === 0) proc.endInput();
      });
      ws.on('close', () => {
        if (session.sessions.delete(end)) proc.kill();
      });
    },
  );
}
