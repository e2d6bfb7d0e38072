// What the agents' service keeps beside its ProviderContext: the clusters
// it has read (agent-clusters.ts), the heartbeats waiting to be written
// (heartbeat-recorder.ts) and the lane every write of node rows by the
// agents' side goes through, one at a time (heartbeat batches, the sweep of
// silent nodes, Attach): none of them can then deadlock another, whatever
// rows they lock. One per database of the contexts, made
// on first use: the gRPC calls and the sweep of silent nodes have contexts
// of their own (server.ts makes the sweep's at each takeover of the
// market) and still share it, and no constructor of a ProviderContext has
// to build it.

import type { Queryable } from '../db/database.js';
import { AgentClusters } from './agent-clusters.js';
import { HeartbeatRecorder } from './heartbeat-recorder.js';
import { SerialLane } from './serial-lane.js';
import type { ProviderContext } from './provider-context.js';

export interface AgentRuntime {
  readonly clusters: AgentClusters;
  readonly lane: SerialLane;
  readonly heartbeats: HeartbeatRecorder;
}

const runtimes = new WeakMap<Queryable, AgentRuntime>();

export function runtimeOf(ctx: ProviderContext): AgentRuntime {
  let runtime = runtimes.get(ctx.db);
  if (runtime === undefined) {
    const lane = new SerialLane();
    runtime = {
      clusters: new AgentClusters(ctx.db),
      lane,
      heartbeats: new HeartbeatRecorder(ctx.db, lane, ctx.logger),
    };
    runtimes.set(ctx.db, runtime);
  }
  return runtime;
}
