// The built agent as a real process (`node agent/dist/main.js`, what
// `gpux agent` runs), for end-to-end tests and the lease bench: started with
// exactly the environment it is given (nothing of this process's GPUX_* or
// NATS_*), ready once its SSH gateway listens and it consumes its cluster's
// events, stopped by PID (SIGTERM drains, D34; SIGKILL is a crash), and
// restarted on the same state directory and SSH port.

import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

import type { Launcher } from './launch.js';

const MAIN = fileURLToPath(new URL('../../agent/dist/main.js', import.meta.url));

/** The agent's settings (README "The agent", agent/src/settings.ts), by their environment names. */
export interface AgentSettings {
  readonly EXCHANGE_GRPC_URL: string;
  readonly GPUX_TOKEN: string;
  readonly GPUX_CLUSTER_ID: string;
  readonly NATS_URL: string;
  readonly GPUX_STATE_DIR: string;
  /** host:port; pick a port (freePort()) so a restart keeps the endpoints the exchange has. */
  readonly GPUX_SSH_LISTEN: string;
  readonly [name: string]: string;
}

export interface AgentProcess {
  readonly child: ChildProcess;
  /** The SSH gateway's port, from its `ssh gateway listening` line. */
  readonly sshPort: number;
  /** Everything printed so far (pino JSON lines and plain text), for failure messages. */
  readonly output: () => string;
  /** The pino lines printed so far whose `msg` is `msg`. */
  logged(msg: string): Record<string, unknown>[];
  /** Resolves with the exit code (null after a signal) once the process has exited. */
  exited(): Promise<number | null>;
  /** SIGTERM (a drain, D34) or SIGKILL (a crash); resolves with the exit code. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<number | null>;
}

export interface StartAgentOptions {
  /** Wait for readiness (default true); false: return once spawned, sshPort is 0. */
  readonly waitReady?: boolean;
  /** Give up waiting for readiness after this long (default 60 s). */
  readonly readyTimeoutMs?: number;
  /** How to run it (default: `node agent/dist/main.js` here); e.g. its image (test/images/). */
  readonly launch?: Launcher;
}

/** What readiness waits for, in the order the agent logs them. */
const READY = ['ssh gateway listening', 'consuming lease events'] as const;

function parseLines(text: string): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a line cut at the end of a chunk, or not JSON
    }
  }
  return lines;
}

/**
 * Spawns the agent with exactly `env` (nothing added, no readiness awaited;
 * sshPort is 0): for settings it must refuse, or a PATH of the test's own.
 */
export function spawnAgentProcess(env: Record<string, string>, launcher?: Launcher): AgentProcess {
  const launch = launcher?.(env) ?? { command: process.execPath, args: [MAIN], env };
  const child = spawn(launch.command, launch.args, {
    env: launch.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exit = once(child, 'exit').then(([code]) => code as number | null);
  return {
    child,
    sshPort: 0,
    output: () => output,
    logged: (msg) => parseLines(output).filter((l) => l['msg'] === msg),
    exited: () => exit,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      if (launch.kill !== undefined) launch.kill(signal);
      else child.kill(signal);
      return exit;
    },
  };
}

/**
 * Starts the agent with `settings` (PROVISIONER defaults to simulated,
 * LOG_LEVEL to info, which readiness needs). PATH and HOME come from this
 * process unless given.
 */
export async function startAgentProcess(
  settings: AgentSettings,
  options: StartAgentOptions = {},
): Promise<AgentProcess> {
  const agent = spawnAgentProcess(
    {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? settings.GPUX_STATE_DIR,
      PROVISIONER: 'simulated',
      LOG_LEVEL: 'info',
      ...settings,
    },
    options.launch,
  );
  if (options.waitReady === false) return agent;

  const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000);
  let exitedEarly = false;
  void agent.exited().then(() => (exitedEarly = true));
  for (;;) {
    const listening = agent.logged(READY[0])[0];
    if (listening !== undefined && agent.logged(READY[1]).length > 0) {
      return { ...agent, sshPort: Number(listening['port']) };
    }
    if (exitedEarly) {
      throw new Error(
        `agent exited (${String(agent.child.exitCode)}) before ready:\n${agent.output()}`,
      );
    }
    if (Date.now() > deadline) {
      await agent.stop('SIGKILL');
      throw new Error(`agent not ready in time:\n${agent.output()}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}
