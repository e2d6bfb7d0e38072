// What the agents' service keeps beside its ProviderContext: the clusters
// it has read (agent-clusters.ts). One per database of the contexts, made
// on first use: the gRPC calls and the sweep of silent nodes have contexts
// of their own (server.ts makes the sweep's at each takeover of the
// market) and still share it, and no constructor of a ProviderContext has
// to build it.

import type { Queryable } from '../db/database.js';
import { AgentClusters } from './agent-clusters.js';
import type { ProviderContext } from './provider-context.js';

export interface AgentRuntime {
  readonly clusters: AgentClusters;
}

const runtimes = new WeakMap<Queryable, AgentRuntime>();

export function runtimeOf(ctx: ProviderContext): AgentRuntime {
  let runtime = runtimes.get(ctx.db);
  if (runtime === undefined) {
    runtime = { clusters: new AgentClusters(ctx.db) };
    runtimes.set(ctx.db, runtime);
  }
  return runtime;
}
