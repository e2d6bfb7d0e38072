// The thread that runs the market's side of the agents' worker
// (agent-worker.ts): starts it, answers its messages with the market's
// backend (agent-backend.ts), and tells it, through shared memory, whether
// this process serves the market and since which takeover.

import { Worker } from 'node:worker_threads';

import type { Logger } from '../logger.js';
import type { AgentBackend } from './agent-backend.js';
import { SharedServing, toWire } from './agent-wire.js';
import type { ToMarket, ToWorker, WorkerSetup } from './agent-wire.js';

const WORKER = new URL('./agent-worker.js', import.meta.url);

export interface AgentThread {
  readonly port: number;
  /** Whether the process serves the market, until when (epoch ms), and its generation. */
  readonly serving: SharedServing;
  /** Stop the service (calls in flight finish, heartbeats written), then the thread. */
  close(): Promise<void>;
}

/** How long the worker may take to close (calls in flight, the last heartbeats' write). */
const CLOSE_TIMEOUT_MS = 10_000;

export async function startAgentThread(
  setup: Omit<WorkerSetup, 'serving'>,
  backend: AgentBackend,
  logger: Logger,
  /** The thread stopped on its own after it started: the process cannot serve agents. */
  onDied: (err: Error) => void,
): Promise<AgentThread> {
  const serving = new SharedServing();
  const worker = new Worker(WORKER, { workerData: { ...setup, serving: serving.buffer } });
  let closing = false;
  let started = false;
  let exited = false;
  let closed: (() => void) | undefined;
  const reply = (m: ToWorker): void => {
    try {
      worker.postMessage(m);
    } catch (err) {
      // A value that cannot be sent (a bug): the call fails rather than hangs.
      logger.error({ err }, "an answer to the agents' thread could not be sent");
      if ('id' in m && !('error' in m)) {
        worker.postMessage({ type: 'reply', id: m.id, error: toWire(err) });
      }
    }
  };

  const port = await new Promise<number>((resolve, reject) => {
    worker.on('message', (m: ToMarket) => {
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
        case 'run':
          backend.run(m.method, m.caller, m.request).then(
            (value) => reply({ type: 'reply', id: m.id, value }),
            (err: unknown) => {
              logIfOurs(logger, m.method, err);
              reply({ type: 'reply', id: m.id, error: toWire(err) });
            },
          );
          return;
        case 'nodes':
          backend.reportNodes(m.reports).then(
            (value) => reply({ type: 'reply', id: m.id, value }),
            (err: unknown) => {
              logIfOurs(logger, 'Heartbeat', err);
              reply({ type: 'reply', id: m.id, error: toWire(err) });
            },
          );
          return;
      }
    });
    worker.on('error', (err) => {
      logger.error({ err }, "the agents' gRPC thread failed");
      reject(err);
    });
    worker.on('exit', (code) => {
      exited = true;
      closed?.();
      if (closing) return;
      const err = new Error(`the agents' gRPC thread exited (${code})`);
      reject(err);
      // Without it no agent is heard: the process cannot do its job.
      if (started) onDied(err);
    });
  }).catch(async (err: unknown) => {
    // It did not start: nothing of it may stay (its pool, its port).
    closing = true;
    await worker.terminate();
    throw err;
  });

  return {
    port,
    serving,
    async close() {
      if (closing) return;
      closing = true;
      if (!exited) {
        const done = new Promise<void>((resolve) => (closed = resolve));
        reply({ type: 'close' });
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          done,
          new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS))),
        ]);
        clearTimeout(timer);
      }
      await worker.terminate();
    },
  };
}

/** What the worker's front turns into INTERNAL is logged here, where it happened. */
function logIfOurs(logger: Logger, method: string, err: unknown): void {
  if (toWire(err).kind === 'other') logger.error({ err, method }, 'agent call failed');
}
