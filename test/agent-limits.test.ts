// The real agent keeps within the exchange's per-provider limits by itself
// (issue 18), across real processes: the built exchange on PostgreSQL with
// its gRPC limits as configured by default (heartbeats about twice per
// declared interval per cluster, reports and sell changes per minute, calls
// in flight per provider), and the built agent heartbeating every second.
// Every lease of the cluster ends at once, twice over: each end used to send
// a heartbeat of its own; now the agent coalesces them, reports each end
// and lists every node again, and the exchange refuses none of its calls.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ProviderStack } from './support/provider-stack.js';

const NODES = ['gpu-1', 'gpu-2', 'gpu-3', 'gpu-4', 'gpu-5', 'gpu-6'];
const GPUS = NODES.length * 8;
const HEARTBEAT_MS = 1_000;

let stack: ProviderStack;

beforeAll(async () => {
  stack = await ProviderStack.start({ nodes: NODES, label: 'gpux_agent_limits' });
});

afterAll(async () => {
  await stack?.close();
});

interface StatusFile {
  readonly lastHeartbeat?: { atMs: number; ok: boolean; error?: string };
  readonly selling?: { error?: string; listedNodes: number };
  readonly exchange: { backoff: unknown[]; refused: unknown[] };
}

const statusFile = (): StatusFile =>
  JSON.parse(readFileSync(join(stack.agentStateDir, 'status.json'), 'utf8')) as StatusFile;

/** The lines of a process's output that name a refusal of the limits (their start). */
const refusals = (output: string): string[] =>
  output
    .split('\n')
    .filter((l) => l.includes('RESOURCE_EXHAUSTED'))
    .map((l) => l.slice(0, 400));

describe('the agent through bursts of lease ends against the real exchange', () => {
  it('every node listed again after each burst; no call answered RESOURCE_EXHAUSTED', async () => {
    for (let round = 1; round <= 2; round++) {
      await stack.waitForAsks(GPUS);
      const leases: string[] = [];
      while (leases.length < NODES.length) {
        leases.push((await stack.buyNode())['lease_id'] as string);
      }
      for (const id of leases) await stack.waitForLease(id);

      // Every lease ends at the same moment: a revoke event each, handled in parallel.
      await Promise.all(leases.map((id) => stack.terminate(id)));
      // Listed again: the agent revoked each, and a heartbeat since showed the nodes free.
      await stack.waitForAsks(GPUS);
      const relistedAt = Date.now();
      // Two more heartbeat rounds after it, so a late refusal would be written down.
      await stack.waitFor(`two heartbeats after round ${round}`, () => {
        const hb = statusFile().lastHeartbeat;
        return hb !== undefined && hb.atMs > relistedAt + 2 * HEARTBEAT_MS;
      });
    }

    expect(refusals(stack.agent?.output() ?? '')).toEqual([]);
    expect(refusals(stack.exchange?.output() ?? '')).toEqual([]);
    const status = statusFile();
    expect(status.lastHeartbeat).toMatchObject({ ok: true });
    expect(status.selling?.error).toBeUndefined();
    expect(status.selling?.listedNodes).toBe(NODES.length);
    expect(status.exchange).toEqual({ backoff: [], refused: [] });
  });
});
