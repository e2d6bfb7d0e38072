// The agents' gRPC service in a worker thread of its own (issue 18): on
// PostgreSQL the exchange runs it here so that what agents send (decoding,
// tokens, shares, bounds, heartbeats) costs the thread that serves the
// customers nothing. It has its own PostgreSQL connections
// (GPUX_AGENT_DB_CONNECTIONS) and reaches the market only through messages
// (agent-wire.ts): the calls other than Heartbeat, and the nodes' statuses,
// which agent-thread.ts answers beside the market.

import { parentPort, workerData } from 'node:worker_threads';

import { GpuxError } from '@gpux/shared';
import { pino } from 'pino';

import { Directory } from '../accounts/directory.js';
import type { Principal } from '../accounts/accounts.js';
import type { AgentBackend, ClusterNodes, ForwardedMethod } from './agent-backend.js';
import { agentPool } from './agent-database.js';
import { SharedServing, fromWire } from './agent-wire.js';
import type { NodeViews, ToMarket, ToWorker, WireError, WorkerSetup } from './agent-wire.js';
import { startAgentServer } from './grpc-server.js';
import type { AgentServer } from './grpc-server.js';

/** Longer than any call beside the market takes: a sell through the book, a report. */
const ASK_TIMEOUT_MS = 30_000;

const port = parentPort;
if (port === null) throw new Error('agent-worker.ts runs as a worker thread');
const setup = workerData as WorkerSetup;
const send = (m: ToMarket): void => port.postMessage(m);

/** The market's side, over the message port. */
class PortBackend implements AgentBackend {
  private next = 0;
  private readonly waiting = new Map<
    number,
    { resolve(v: unknown): void; reject(e: unknown): void }
  >();

  answer(m: { id: number; value?: unknown; error?: WireError }): void {
    const w = this.waiting.get(m.id);
    if (w === undefined) return;
    this.waiting.delete(m.id);
    if (m.error !== undefined) w.reject(fromWire(m.error));
    else w.resolve(m.value);
  }

  private ask<T>(build: (id: number) => ToMarket): Promise<T> {
    const id = ++this.next;
    return new Promise<T>((resolve, reject) => {
      // An answer that never comes (a bug beside the market) fails the call, not hangs it.
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new GpuxError('unavailable', 'the market did not answer in time; retry shortly'));
      }, ASK_TIMEOUT_MS);
      this.waiting.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e instanceof Error ? e : new Error(String(e)));
        },
      });
      send(build(id));
    });
  }

  run(method: ForwardedMethod, caller: Principal, request: unknown): Promise<unknown> {
    return this.ask((id) => ({ type: 'run', id, method, caller, request }));
  }

  reportNodes(reports: readonly ClusterNodes[]): Promise<NodeViews> {
    return this.ask((id) => ({ type: 'nodes', id, reports }));
  }
}

const logger = pino({ level: setup.logLevel }).child({ thread: 'agents' });
const db = agentPool(setup.databaseUrl, setup.connections, logger);
const serving = new SharedServing(setup.serving);
const backend = new PortBackend();
let server: AgentServer | undefined;
const directory = new Directory(db);
// Every agent comes back every few seconds: its token's principal is read
// again for all of them at once, not one lookup each (directory.ts).
const renewing = setInterval(() => {
  directory.renew().catch((err: unknown) => {
    logger.warn({ err }, "renewing the agents' tokens failed; trying again");
  });
}, 5_000);
renewing.unref();

port.on('message', (m: ToWorker) => {
  if (m.type === 'reply') {
    backend.answer(m);
    return;
  }
  void (async () => {
    clearInterval(renewing);
    try {
      await server?.close();
      await db.close();
    } catch (err) {
      logger.error({ err }, "closing the agents' gRPC service failed");
    } finally {
      send({ type: 'closed' });
    }
  })();
});

try {
  server = await startAgentServer(
    {
      db,
      directory,
      backend,
      logger,
      clock: () => Date.now(),
      serving: () => serving.serving(),
      generation: () => serving.generation(),
    },
    setup.server,
  );
  send({ type: 'listening', port: server.port });
} catch (err) {
  send({ type: 'failed', message: err instanceof Error ? err.message : String(err) });
}
