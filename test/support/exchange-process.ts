// The built exchange as a real process (`node exchange/dist/main.js` with
// the flags npm start uses), for end-to-end tests: started with the given
// environment, its URL read from the banner, stopped by PID.

import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

import { EXCHANGE_NODE_FLAGS } from '@gpux/exchange';

const MAIN = fileURLToPath(new URL('../../exchange/dist/main.js', import.meta.url));

export interface ExchangeProcess {
  readonly url: string;
  /** The agents' gRPC service (GRPC_PORT), from the banner. */
  readonly grpcPort: number;
  readonly child: ChildProcess;
  /** stdout and stderr so far, for failure messages. */
  output(): string;
  /** SIGTERM (a drain) or SIGKILL (a crash); resolves with the exit code. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<number | null>;
}

/** Starts the exchange on free ports (HTTP and gRPC) with `env` added to this process's. */
export async function startExchangeProcess(env: NodeJS.ProcessEnv): Promise<ExchangeProcess> {
  const child = spawn(process.execPath, [...EXCHANGE_NODE_FLAGS, MAIN], {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: '0',
      GRPC_PORT: '0',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const [url, grpcPort] = await new Promise<[string, number]>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(output);
      const g = /agents' gRPC service on port (\d+)/.exec(output);
      if (m?.[1] !== undefined && g?.[1] !== undefined) resolve([m[1], Number(g[1])]);
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`exchange exited (${code}):\n${output}`)));
  });
  return {
    url,
    grpcPort,
    child,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const exited = once(child, 'exit');
      child.kill(signal);
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
}
