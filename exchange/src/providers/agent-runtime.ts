// What the agents' service keeps beside the database it reads through: the
// clusters it has read (agent-clusters.ts). One per database, made on first
// use, so the gRPC front and the calls it hands to the market
// (agent-backend.ts) share it when they share a database, and no
// constructor of a ProviderContext has to build it.

import type { Queryable } from '../db/database.js';
import { AgentClusters } from './agent-clusters.js';

export interface AgentRuntime {
  readonly clusters: AgentClusters;
}

const runtimes = new WeakMap<Queryable, AgentRuntime>();

export function runtimeOf(ctx: { readonly db: Queryable }): AgentRuntime {
  let runtime = runtimes.get(ctx.db);
  if (runtime === undefined) {
    runtime = { clusters: new AgentClusters(ctx.db) };
    runtimes.set(ctx.db, runtime);
  }
  return runtime;
}
