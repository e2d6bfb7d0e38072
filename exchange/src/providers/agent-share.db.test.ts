// Issue 18, "Each provider's share", over a real gRPC connection: past its
// limits a provider's call is RESOURCE_EXHAUSTED with the time to wait in
// the trailing metadata (`retry-after-ms`) and in the message; one
// provider's share is apart from another's and from its own REST limits
// (D18 does not count agents' calls).

/* eslint-disable @typescript-eslint/unbound-method -- h.call() invokes each client method with the client as `this` */

import { status } from '@grpc/grpc-js';
import type { ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ADMIN_TOKEN } from '../market/testing/test-exchange.js';
import { DEFAULT_AGENT_SHARE, IN_FLIGHT_RETRY_MS } from './agent-share.js';
import { RETRY_AFTER_MS } from './grpc-server.js';
import { agentHarness } from './testing/agent-harness.js';
import type { AgentHarness, Failed, Provider } from './testing/agent-harness.js';

let h: AgentHarness;
/** While set, the market's side waits for it before it runs a call. */
let gate: Promise<void> | undefined;

beforeAll(async () => {
  h = await agentHarness({
    backend: (b) => ({
      run: async (method, caller, request) => {
        await gate;
        return b.run(method, caller, request);
      },
      reportNodes: (reports) => b.reportNodes(reports),
    }),
    server: { limits: { ...DEFAULT_AGENT_SHARE, sellsPerMinute: 2 } },
    exchange: { rateLimits: { query: 5, create: 5, cancel: 5 } },
  });
});

afterAll(async () => {
  await h?.close();
});

/** Attach with a 300 s interval: every heartbeat of the test is in one window. */
const attachSlow = (p: Provider) =>
  h.call(h.client.attach, p.token, {
    clusterId: p.clusterId,
    heartbeatIntervalSeconds: 300,
    agentVersion: 'test',
    provisioner: 'simulated',
    host: undefined,
  });

async function heartbeat(p: Provider, hostnames: readonly string[]) {
  return h.call(h.client.heartbeat, p.token, {
    clusterId: p.clusterId,
    nodes: hostnames.map((hostname) => ({ hostname, healthy: true, problem: '', gpus: [] })),
  });
}

/** RESOURCE_EXHAUSTED, with the same whole milliseconds in the trailer and the message. */
function retryAfterMs(f: Failed): number {
  expect(f.code).toBe(status.RESOURCE_EXHAUSTED);
  const [trailer] = f.trailers.get(RETRY_AFTER_MS);
  expect(trailer).toMatch(/^[1-9]\d*$/);
  expect(f.details).toContain(`retry after ${String(trailer)} ms`);
  return Number(trailer);
}

describe("each provider's share of the agents' service (issue 18)", () => {
  it('a third heartbeat within the declared interval is RESOURCE_EXHAUSTED with retry-after-ms; other clusters and providers go on', async () => {
    const p = await h.provider(2);
    const hosts = (await attachSlow(p)).nodes.map((n) => n.hostname);
    await heartbeat(p, hosts);
    await heartbeat(p, hosts);
    const f = await h.failure(heartbeat(p, hosts));
    const wait = retryAfterMs(f);
    expect(wait).toBeLessThanOrEqual(300_000);
    expect(f.details).toMatch(
      /^heartbeats of cluster cls_\w+: at most 2 per declared interval of 300 s \(counted over 90 % of it\) \(GPUX_AGENT_HEARTBEATS_PER_INTERVAL\)/,
    );

    // The same provider's second cluster has a share of its own.
    const second = await h.ex.call('POST', '/v1/admin/clusters', ADMIN_TOKEN, {
      provider_account_id: p.accountId,
      gpu_type: 'h100',
      zone: 'us-west-1',
      nodes: [{ hostname: `second.${p.accountId.slice(-6)}.example` }],
    });
    const q: Provider = { ...p, clusterId: second.json['cluster_id'] as string };
    const qHosts = (await attachSlow(q)).nodes.map((n) => n.hostname);
    await heartbeat(q, qHosts);
    // And so has another provider.
    const other = await h.provider(1);
    await heartbeat(
      other,
      (await attachSlow(other)).nodes.map((n) => n.hostname),
    );
  });

  it('sell changes past the minute share are refused, with the time to wait', async () => {
    const p = await h.provider(3, 'h200', 'eu-west-1');
    await heartbeat(
      p,
      (await attachSlow(p)).nodes.map((n) => n.hostname),
    );
    const sell = () =>
      h.call(h.client.publishSell, p.token, {
        clusterId: p.clusterId,
        nodes: 1,
        priceCents: 300,
        windowHours: 24,
      });
    await sell();
    await sell();
    const wait = retryAfterMs(await h.failure(sell()));
    expect(wait).toBeLessThanOrEqual(60_000);
    // Nothing reached the book: two sells rest, not three.
    const open = await h.call(h.client.listSells, p.token, { clusterId: p.clusterId });
    expect(open.orders).toHaveLength(2);
  });

  it("a provider's calls in flight are bounded: one more is RESOURCE_EXHAUSTED until one ends", async () => {
    const p = await h.provider(1, 'b300', 'eu-west-1');
    // Hold the market's side: the provider's Attaches wait there, in flight.
    let open: () => void = () => undefined;
    const held = new Promise<void>((r) => (open = r));
    gate = held;
    const { callsInFlight } = DEFAULT_AGENT_SHARE;
    const results = Array.from({ length: callsInFlight + 1 }, () =>
      attachSlow(p).then(
        () => undefined,
        (err: ServiceError) => err,
      ),
    );
    const first = await Promise.race(results);
    expect(first?.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(first?.metadata.get(RETRY_AFTER_MS)).toEqual([String(IN_FLIGHT_RETRY_MS)]);
    expect(first?.details).toContain(`at most ${callsInFlight} calls of this provider at once`);
    open();
    await held;
    gate = undefined;
    expect((await Promise.all(results)).filter((e) => e !== undefined)).toHaveLength(1);
    // They ended: the next call is admitted.
    await attachSlow(p);
  });

  it("D18: agents' calls are not counted in the provider's REST limits", async () => {
    const p = await h.provider(1, 'b200', 'us-east-1');
    await attachSlow(p);
    for (let i = 0; i < 10; i++)
      await h.call(h.client.listLeases, p.token, { clusterId: p.clusterId });
    const rest = await h.ex.call('GET', '/v1/orders', p.token);
    expect(rest.status).toBe(200);
    expect(rest.headers['x-ratelimit-remaining']).toBe('4');
  });
});
