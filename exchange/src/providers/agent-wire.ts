// The messages between the agents' service process (agent-process.ts) and
// the exchange process that runs the market (agent-host.ts), and the state
// the market's side tells the service.

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
  /** The calls answered since the last such message: [method, gRPC status code, how many]. */
  | { readonly type: 'calls'; readonly counts: readonly (readonly [string, number, number])[] }
  | { readonly type: 'closed' };

export type ToWorker =
  | { readonly type: 'setup'; readonly setup: WorkerSetup }
  | { readonly type: 'reply'; readonly id: number; readonly value: unknown }
  | { readonly type: 'reply'; readonly id: number; readonly error: WireError }
  | { readonly type: 'serving'; readonly untilMs: number; readonly generation: number }
  | { readonly type: 'leases'; readonly clusters: readonly string[] | 'all' }
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
 * Until when the process serves the market (ms of `performance.timeOrigin
 * + performance.now()`: the wall clock at each process's start, then
 * monotonic, so the two processes' readings agree), and since which
 * takeover: the market's side sends it whenever it changes (a start, each
 * renewal, a loss). The service serves only while it holds, by its own
 * clock: a market's side that stopped (SIGSTOP) stops the service too,
 * once its last word runs out.
 */
export class ServingState {
  private untilMs = 0;
  private gen = 0;

  set(untilMs: number, generation: number): void {
    this.untilMs = untilMs;
    this.gen = generation;
  }

  serving(): boolean {
    return performance.timeOrigin + performance.now() < this.untilMs;
  }

  generation(): number {
    return this.gen;
  }
}
