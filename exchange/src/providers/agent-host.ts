// The market's side of the agents' service process (agent-process.ts):
// starts it, answers its messages with the market's backend
// (agent-backend.ts), and tells it whether this process serves the market,
// until when and since which takeover.
//
// A process of its own rather than a thread: its garbage collector works
// beside it on helper threads (the exchange's own runs single-threaded,
// node-flags.ts), so the heap of thousands of agents' HTTP/2 connections
// never pauses the customers' requests, nor the agents' calls for long.

import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import type { Logger } from '../logger.js';
import type { AgentBackend } from './agent-backend.js';
import { toWire } from './agent-wire.js';
import type { ToMarket, ToWorker, WorkerSetup } from './agent-wire.js';

const ENTRY = fileURLToPath(new URL('./agent-process.js', import.meta.url));

/**
 * The service process's node flags: none of the exchange's (its
 * single-threaded collector would pause this process's thousands of
 * connections for hundreds of ms), and a young generation large enough that
 * a call's objects die young.
 */
export const AGENT_PROCESS_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=32'];

/** How long the service may take to close (calls in flight, the last heartbeats' write). */
const CLOSE_TIMEOUT_MS = 10_000;

export interface AgentHost {
  readonly port: number;
  /** This process serves the market until `untilMs` (performance.timeOrigin + now()); 0: it does not. */
  setServing(untilMs: number, generation: number): void;
  /** The market changed these clusters' leases ('all': a book was rebuilt). */
  invalidate(clusters: readonly string[] | 'all'): void;
  /** Stop the service (calls in flight finish, heartbeats written), then its process. */
  close(): Promise<void>;
}

export async function startAgentHost(
  setup: WorkerSetup,
  backend: AgentBackend,
  logger: Logger,
  /** The process stopped on its own after it started: the exchange cannot serve agents. */
  onDied: (err: Error) => void,
  /** The calls it answered, told every few seconds (gpux_grpc_calls_total, metrics/). */
  onCalls?: (method: string, code: number, n: number) => void,
): Promise<AgentHost> {
  const child = fork(ENTRY, [], {
    execArgv: [...AGENT_PROCESS_NODE_FLAGS],
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let closing = false;
  let started = false;
  let exited = false;
  let closed: (() => void) | undefined;
  const send = (m: ToWorker): void => {
    if (!child.connected) return;
    try {
      child.send(m);
    } catch (err) {
      // A value that cannot be sent (a bug): the call fails rather than hangs.
      logger.error({ err }, "an answer to the agents' service could not be sent");
      if (m.type === 'reply' && !('error' in m)) {
        child.send({ type: 'reply', id: m.id, error: toWire(err) });
      }
    }
  };

  const port = await new Promise<number>((resolve, reject) => {
    child.on('message', (m: ToMarket) => {
      switch (m.type) {
        case 'listening':
          started = true;
          resolve(m.port);
          return;
        case 'failed':
          reject(new Error(`the agents' gRPC service could not start: ${m.message}`));
          return;
        case 'closed':
          closed?.();
          return;
        case 'calls':
          for (const [method, code, n] of m.counts) onCalls?.(method, code, n);
          return;
        case 'run':
          backend.run(m.method, m.caller, m.request).then(
            (value) => send({ type: 'reply', id: m.id, value }),
            (err: unknown) => {
              logIfOurs(logger, m.method, err);
              send({ type: 'reply', id: m.id, error: toWire(err) });
            },
          );
          return;
        case 'nodes':
          backend.reportNodes(m.reports).then(
            (value) => send({ type: 'reply', id: m.id, value }),
            (err: unknown) => {
              logIfOurs(logger, 'Heartbeat', err);
              send({ type: 'reply', id: m.id, error: toWire(err) });
            },
          );
          return;
      }
    });
    child.on('error', (err) => {
      logger.error({ err }, "the agents' gRPC service process failed");
      reject(err);
    });
    child.on('exit', (code, signal) => {
      exited = true;
      closed?.();
      if (closing) return;
      const err = new Error(`the agents' gRPC service process exited (${code ?? signal})`);
      reject(err);
      // Without it no agent is heard: the exchange cannot do its job.
      if (started) onDied(err);
    });
    send({ type: 'setup', setup });
  }).catch((err: unknown) => {
    // It did not start: nothing of it may stay (its pool, its port).
    closing = true;
    child.kill('SIGKILL');
    throw err;
  });

  return {
    port,
    setServing(untilMs, generation) {
      send({ type: 'serving', untilMs, generation });
    },
    invalidate(clusters) {
      send({ type: 'leases', clusters });
    },
    async close() {
      if (closing) return;
      closing = true;
      if (exited) return;
      const done = new Promise<void>((resolve) => (closed = resolve));
      send({ type: 'close' });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        done,
        new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS))),
      ]);
      clearTimeout(timer);
      if (!exited) child.kill('SIGKILL');
    },
  };
}

/** What the service turns into INTERNAL is logged here, where it happened. */
function logIfOurs(logger: Logger, method: string, err: unknown): void {
  if (toWire(err).kind === 'other') logger.error({ err, method }, 'agent call failed');
}
