// The agents' gRPC service in a process of its own (issue 18): on
// PostgreSQL the exchange runs it here so that what agents send (decoding,
// tokens, shares, bounds, heartbeats) costs the process that serves the
// customers nothing, not even its garbage collector's pauses: this process
// has its own heap and collector settings (agent-host.ts). It has its own
// PostgreSQL connections (GPUX_AGENT_DB_CONNECTIONS) and reaches the market
// only through messages over the IPC channel (agent-wire.ts): the calls
// other than Heartbeat, and the nodes' statuses, which agent-host.ts answers
// beside the market. It stops when that channel closes (the exchange
// stopped, however it stopped).

import { GpuxError } from '@gpux/shared';
import { pino } from 'pino';

import { Directory, RENEW_EVERY_MS } from '../accounts/directory.js';
import type { Principal } from '../accounts/accounts.js';
import type { Database } from '../db/database.js';
import type { AgentBackend, ClusterNodes, ForwardedMethod } from './agent-backend.js';
import { agentPool } from './agent-database.js';
import { ServingState, fromWire } from './agent-wire.js';
import type { NodeViews, ToMarket, ToWorker, WireError, WorkerSetup } from './agent-wire.js';
import { startAgentServer } from './grpc-server.js';
import type { AgentServer } from './grpc-server.js';

/** Longer than any call beside the market takes: a sell through the book, a report. */
const ASK_TIMEOUT_MS = 30_000;

if (process.send === undefined) throw new Error('agent-process.ts runs as a child of the exchange');
const send = (m: ToMarket): void => {
  // The exchange is gone: this process ends with it ('disconnect' below).
  if (process.connected) process.send?.(m);
};

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

const serving = new ServingState();
const backend = new PortBackend();
let server: AgentServer | undefined;
let db: Database | undefined;
let renewing: NodeJS.Timeout | undefined;
let renewal: Promise<void> | undefined;

async function start(setup: WorkerSetup): Promise<void> {
  const logger = pino({ level: setup.logLevel }).child({ process: 'agents' });
  const pool = agentPool(setup.databaseUrl, setup.connections, logger);
  db = pool;
  const directory = new Directory(pool);
  // Every agent comes back every few seconds: its token's principal is read
  // again for all of them at once, not one lookup each (directory.ts).
  renewing = setInterval(() => {
    renewal ??= directory
      .renew()
      .catch((err: unknown) => {
        logger.warn({ err }, "renewing the agents' tokens failed; trying again");
      })
      .finally(() => {
        renewal = undefined;
      });
  }, RENEW_EVERY_MS);
  renewing.unref();
  try {
    server = await startAgentServer(
      {
        db: pool,
        directory,
        backend,
        logger,
        clock: () => Date.now(),
        serving: () => serving.serving(),
        generation: () => serving.generation(),
        onCall: countCall,
      },
      setup.server,
    );
    send({ type: 'listening', port: server.port });
  } catch (err) {
    send({ type: 'failed', message: err instanceof Error ? err.message : String(err) });
  }
}

/**
 * The calls answered, by method and code, told to the exchange every few
 * seconds and at close (its /metrics counts them, metrics/exchange-metrics.ts):
 * one message per interval, not one per call.
 */
const calls = new Map<string, [string, number, number]>();
const CALLS_EVERY_MS = 2_000;

function countCall(method: string, code: number): void {
  const key = `${method} ${code}`;
  const c = calls.get(key);
  if (c === undefined) calls.set(key, [method, code, 1]);
  else c[2]++;
}

function sendCalls(): void {
  if (calls.size === 0) return;
  send({ type: 'calls', counts: [...calls.values()] });
  calls.clear();
}

setInterval(sendCalls, CALLS_EVERY_MS).unref();

async function close(): Promise<void> {
  clearInterval(renewing);
  sendCalls();
  try {
    await renewal;
    await server?.close();
    await db?.close();
  } finally {
    send({ type: 'closed' });
  }
}

process.on('message', (m: ToWorker) => {
  switch (m.type) {
    case 'setup':
      void start(m.setup);
      return;
    case 'reply':
      backend.answer(m);
      return;
    case 'serving':
      serving.set(m.untilMs, m.generation);
      return;
    case 'leases':
      server?.front.invalidate(m.clusters);
      return;
    case 'close':
      void close().finally(() => process.exit(0));
      return;
  }
});
// The exchange stopped (a kill -9 too): nothing here may outlive it.
process.on('disconnect', () => process.exit(0));
