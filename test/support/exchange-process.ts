// The built exchange as a real process (`node exchange/dist/main.js` with
// the flags npm start uses), for end-to-end tests: started with the given
// environment, its URL read from the banner, stopped by PID; or run until it
// exits by itself (a start it refuses).

import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

import { EXCHANGE_NODE_FLAGS } from '@gpux/exchange';

import type { Launch, Launcher } from './launch.js';

const MAIN = fileURLToPath(new URL('../../exchange/dist/main.js', import.meta.url));

export interface ExchangeProcess {
  readonly url: string;
  /** The agents' gRPC service (GRPC_PORT), from the banner. */
  readonly grpcPort: number;
  readonly child: ChildProcess;
  /** What its banner said first: it owned the market, or stood by (docs/ownership.md). */
  readonly startedAs: 'owner' | 'standby';
  /** stdout and stderr so far, for failure messages. */
  output(): string;
  /** stdout alone so far: the log records (the banner is on stderr). */
  stdout(): string;
  /** Resolves once stdout or stderr (from the start) matches `pattern`; rejects if the process exits first. */
  waitFor(pattern: RegExp): Promise<void>;
  /** SIGTERM (a drain) or SIGKILL (a crash); resolves with the exit code. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<number | null>;
}

export interface StartOptions {
  /**
   * Resolve on a standby's banner too (another process owns the market),
   * not only once this one owns it and serves.
   */
  readonly standbyOk?: boolean;
  /** How to run it (default: `node` with the npm start flags here); e.g. its image (test/images/). */
  readonly launch?: Launcher;
}

/** The exchange on free ports (HTTP and gRPC) with `env` added to this process's. */
function launchExchange(env: NodeJS.ProcessEnv, launcher?: Launcher): Launch {
  const settings = { HOST: '127.0.0.1', PORT: '0', GRPC_PORT: '0', LOG_LEVEL: 'warn', ...env };
  return (
    launcher?.(settings) ?? {
      command: process.execPath,
      args: [...EXCHANGE_NODE_FLAGS, MAIN],
      env: { ...process.env, ...settings },
    }
  );
}

export interface ExchangeRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the exchange (as startExchangeProcess would) until it exits by itself: a start it refuses. */
export async function runExchangeToExit(env: NodeJS.ProcessEnv): Promise<ExchangeRun> {
  const launch = launchExchange(env);
  const child = spawn(launch.command, launch.args, {
    env: launch.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

/** Starts the exchange on free ports (HTTP and gRPC) with `env` added to this process's. */
export async function startExchangeProcess(
  env: NodeJS.ProcessEnv,
  o: StartOptions = {},
): Promise<ExchangeProcess> {
  const launch = launchExchange(env, o.launch);
  const child = spawn(launch.command, launch.args, {
    env: launch.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let stdout = '';
  const watchers = new Set<() => void>();
  const seen = (): void => {
    for (const w of watchers) w();
  };
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    stdout += chunk.toString();
    seen();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    seen();
  });
  const waitFor = (pattern: RegExp): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (!pattern.test(output)) return;
        watchers.delete(check);
        child.off('exit', exited);
        resolve();
      };
      const exited = (code: number | null): void => {
        watchers.delete(check);
        reject(new Error(`exchange exited (${code}) before ${pattern}:\n${output}`));
      };
      watchers.add(check);
      child.once('exit', exited);
      check();
    });
  const banner =
    o.standbyOk === true
      ? /(listening|standby) on (http:\/\/\S+)/
      : /(listening) on (http:\/\/\S+)/;
  await waitFor(banner);
  await waitFor(/agents' gRPC service on port (\d+)/);
  const m = banner.exec(output);
  const g = /agents' gRPC service on port (\d+)/.exec(output);
  const url = m?.[2] ?? '';
  const grpcPort = Number(g?.[1]);
  return {
    url,
    grpcPort,
    child,
    startedAs: m?.[1] === 'standby' ? 'standby' : 'owner',
    output: () => output,
    stdout: () => stdout,
    waitFor,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const exited = once(child, 'exit');
      if (launch.kill !== undefined) launch.kill(signal);
      else child.kill(signal);
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
}
