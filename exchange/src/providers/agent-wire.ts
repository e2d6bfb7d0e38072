// The messages between the agents' worker thread (agent-worker.ts) and the
// thread that runs the market (agent-thread.ts), and the state they share.

import { GpuxError, isErrorCode } from '@gpux/shared';
import type { status } from '@grpc/grpc-js';

import type { Principal } from '../accounts/accounts.js';
import type { LogLevel } from '../config.js';
import type { ClusterNodes, ForwardedMethod } from './agent-backend.js';
import type { AgentServerOptions } from './grpc-server.js';
import type { NodeView } from './node-status.js';
import { AgentCallError } from './provider-context.js';

/** What the worker is started with. */
export interface WorkerSetup {
  readonly databaseUrl: string;
  readonly connections: number;
  readonly logLevel: LogLevel;
  readonly server: AgentServerOptions;
  /** Float64Array over it: [serving until (epoch ms, 0: not serving), generation]. */
  readonly serving: SharedArrayBuffer;
}

export type ToMarket =
  | { readonly type: 'listening'; readonly port: number }
  | { readonly type: 'failed'; readonly message: string }
  | {
      readonly type: 'run';
      readonly id: number;
      readonly method: ForwardedMethod;
      readonly caller: Principal;
      readonly request: unknown;
    }
  | { readonly type: 'nodes'; readonly id: number; readonly reports: readonly ClusterNodes[] }
  | { readonly type: 'closed' };

export type ToWorker =
  | { readonly type: 'reply'; readonly id: number; readonly value: unknown }
  | { readonly type: 'reply'; readonly id: number; readonly error: WireError }
  | { readonly type: 'close' };

/** An error thrown beside the market, as the worker rebuilds it. */
export interface WireError {
  readonly kind: 'agent' | 'gpux' | 'other';
  readonly code: string | number;
  readonly message: string;
  readonly retryAfterMs?: number | undefined;
}

export function toWire(err: unknown): WireError {
  if (err instanceof AgentCallError) {
    return {
      kind: 'agent',
      code: err.code,
      message: err.message,
      ...(err.retryAfterMs === undefined ? {} : { retryAfterMs: err.retryAfterMs }),
    };
  }
  if (err instanceof GpuxError) return { kind: 'gpux', code: err.code, message: err.message };
  return { kind: 'other', code: 'internal', message: 'internal error' };
}

export function fromWire(e: WireError): Error {
  if (e.kind === 'agent') return new AgentCallError(e.code as status, e.message, e.retryAfterMs);
  if (e.kind === 'gpux' && typeof e.code === 'string' && isErrorCode(e.code))
    return new GpuxError(e.code, e.message);
  // Logged where it happened, beside the market: the agent hears INTERNAL.
  return new Error(`beside the market: ${e.message}`);
}

/** The views of `reportNodes`, as sent back. */
export type NodeViews = NodeView[][];

/**
 * Until when (ms of `performance.timeOrigin + performance.now()`, the same
 * clock in every thread of the process) the process serves, and its
 * generation, written and read with Atomics so that no thread sees half of
 * a change: the generation is stored before the time it goes with.
 */
export class SharedServing {
  private readonly cells: BigInt64Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(16)) {
    this.cells = new BigInt64Array(buffer);
  }

  set(untilMs: number, generation: number): void {
    Atomics.store(this.cells, 1, BigInt(generation));
    Atomics.store(this.cells, 0, BigInt(Math.max(0, Math.floor(untilMs))));
  }

  serving(): boolean {
    return performance.timeOrigin + performance.now() < Number(Atomics.load(this.cells, 0));
  }

  generation(): number {
    return Number(Atomics.load(this.cells, 1));
  }
}
