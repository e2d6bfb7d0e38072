// Issue 18, "Input bounds": what a careless or hostile agent sends over a
// real gRPC connection. Every oversized field is INVALID_ARGUMENT naming the
// field and its limit, and leaves every row as it was; a message over the
// server's maximum is RESOURCE_EXHAUSTED; the largest valid heartbeat (1,000
// nodes, every field at its maximum) is OK.

/* eslint-disable @typescript-eslint/unbound-method -- h.call() invokes each client method with the client as `this` */

import { status } from '@grpc/grpc-js';
import { NodeStatus } from '@gpux/proto';
import type { HeartbeatRequest } from '@gpux/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ADMIN_TOKEN } from '../market/testing/test-exchange.js';
import { MAX_CLUSTER_NODES, MAX_MESSAGE_BYTES } from './agent-limits.js';
import { DEFAULT_AGENT_SHARE } from './agent-share.js';
import { agentHarness } from './testing/agent-harness.js';
import type { AgentHarness, Provider } from './testing/agent-harness.js';
import {
  largestAttach,
  largestHeartbeat,
  longestHostKey,
  longestHostnames,
} from './testing/largest-messages.js';

let h: AgentHarness;

beforeAll(async () => {
  // Generous shares: every refusal here is for a bound, none for a rate.
  h = await agentHarness({
    server: {
      limits: { ...DEFAULT_AGENT_SHARE, heartbeatsPerInterval: 100, sellsPerMinute: 100 },
    },
  });
});

afterAll(async () => {
  await h?.close();
});

/** Every row an agent's call could change. */
async function rows(): Promise<string> {
  const tables = ['clusters', 'nodes', 'leases', 'lease_nodes', 'lease_access', 'orders'];
  const all: Record<string, unknown> = {};
  for (const t of tables) all[t] = await h.ex.db.query(`SELECT * FROM ${t} ORDER BY 1`);
  return JSON.stringify(all);
}

const healthy = (hostname: string) => ({ hostname, healthy: true, problem: '', gpus: [] });

describe('bounds on what an agent sends (issue 18)', () => {
  it('a heartbeat of 1,000 nodes with every field at its maximum is answered OK', async () => {
    // The admin API registers a cluster of that many nodes with the longest hostnames.
    const p = await h.ex.party('largest', { scopes: ['provider', 'read'] });
    const hostnames = longestHostnames(MAX_CLUSTER_NODES);
    const made = await h.ex.call('POST', '/v1/admin/clusters', ADMIN_TOKEN, {
      provider_account_id: p.accountId,
      gpu_type: 'b300',
      zone: 'eu-west-1',
      nodes: hostnames.map((hostname) => ({ hostname })),
    });
    expect(made.status).toBe(201);
    const clusterId = made.json['cluster_id'] as string;
    await h.call(h.client.attach, p.token, largestAttach(clusterId));
    const beat = await h.call(h.client.heartbeat, p.token, largestHeartbeat(clusterId, hostnames));
    expect(beat.nodes).toHaveLength(MAX_CLUSTER_NODES);
    expect(beat.nodes.every((n) => n.status === NodeStatus.NODE_STATUS_ONLINE)).toBe(true);
    await h.server.front.flush();
    const [stored] = await h.ex.db.query<{ n: number; gpus: number }>(
      'SELECT count(*)::int AS n, min(jsonb_array_length(gpus))::int AS gpus FROM nodes WHERE cluster_id = $1',
      [clusterId],
    );
    expect(stored).toEqual({ n: MAX_CLUSTER_NODES, gpus: 8 });
  });

  it('a message over the maximum size is RESOURCE_EXHAUSTED, and nothing changes', async () => {
    const p = await h.provider(1);
    const a = await h.attach(p);
    const before = await rows();
    const huge: HeartbeatRequest = {
      clusterId: p.clusterId,
      nodes: [{ ...healthy(a.nodes[0]?.hostname ?? ''), problem: 'x'.repeat(MAX_MESSAGE_BYTES) }],
    };
    const f = await h.failure(h.call(h.client.heartbeat, p.token, huge));
    expect(f.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(await rows()).toBe(before);
  });

  it('every oversized field is INVALID_ARGUMENT naming the field and its limit, and leaves every row as it was', async () => {
    const p: Provider = await h.provider(2, 'h200', 'us-east-1');
    const a = await h.attach(p);
    const [one, two] = a.nodes.map((n) => n.hostname) as [string, string];
    await h.call(h.client.heartbeat, p.token, {
      clusterId: p.clusterId,
      nodes: [healthy(one), healthy(two)],
    });
    await h.call(h.client.publishSell, p.token, {
      clusterId: p.clusterId,
      nodes: 1,
      priceCents: 250,
      windowHours: 24,
    });
    const buyer = await h.ex.party('bounds-buyer');
    const bought = await h.ex.call('POST', '/v1/orders', buyer.token, {
      side: 'buy',
      gpu_type: 'h200',
      zone: 'us-east-1',
      gpu_count: 8,
      duration_hours: 1,
    });
    const leaseId = bought.json['lease_id'] as string;
    expect(leaseId).toMatch(/^lse_/);
    const before = await rows();

    const mb = 'x'.repeat(1024 * 1024);
    const gpu = {
      index: 0,
      name: 'NVIDIA H200',
      uuid: 'GPU-1',
      memoryTotalMib: 1,
      utilizationPercent: 0,
      temperatureC: 30,
    };
    const attach = {
      clusterId: p.clusterId,
      heartbeatIntervalSeconds: 5,
      agentVersion: 'test',
      provisioner: 'simulated',
      host: { hostname: 'agent', os: 'linux', cpuModel: 'cpu', cpuCores: 8, memoryMib: 1024 },
    };
    const beat = (nodes: HeartbeatRequest['nodes']) => () =>
      h.call(h.client.heartbeat, p.token, { clusterId: p.clusterId, nodes });
    const endpoint = `${leaseId.replace('_', '-')}-1@gw.example:2222`;
    const report = {
      clusterId: p.clusterId,
      leaseId,
      sshEndpoints: [{ hostname: one, endpoint }],
      sshHostKeys: [longestHostKey()],
      kubeconfig: 'apiVersion: v1\n',
    };
    const cases: [string, () => Promise<unknown>, RegExp][] = [
      [
        '1 MB of host facts',
        () => h.call(h.client.attach, p.token, { ...attach, host: { ...attach.host, os: mb } }),
        /^host\.os is at most 256 bytes, got 1048576$/,
      ],
      [
        'a long agent version',
        () => h.call(h.client.attach, p.token, { ...attach, agentVersion: 'v'.repeat(129) }),
        /^agent_version is at most 128 bytes/,
      ],
      [
        'a 1 MB GPU name',
        beat([{ ...healthy(one), gpus: [{ ...gpu, name: mb }] }]),
        /^nodes\[0\]\.gpus\[0\]\.name is at most 256 bytes/,
      ],
      [
        '10,000 GPUs on one 8-GPU node',
        beat([{ ...healthy(one), gpus: Array.from({ length: 10_000 }, () => gpu) }]),
        /^nodes\[0\]\.gpus has at most 8 entries \(a node is sold whole, 8 GPUs\), got 10000$/,
      ],
      [
        'a long problem',
        beat([{ ...healthy(one), healthy: false, problem: 'p'.repeat(513) }]),
        /^nodes\[0\]\.problem is at most 512 bytes/,
      ],
      [
        'more nodes than the cluster has',
        beat([healthy(one), healthy(two), healthy('node-3.example')]),
        /^nodes has at most 2 entries \(cluster cls_\w+ has 2 nodes\), got 3$/,
      ],
      [
        'a node listed twice',
        beat([healthy(one), healthy(one.toUpperCase())]),
        /^nodes\[1\]\.hostname: .* is listed twice; each node once$/,
      ],
      [
        'a hostname of another cluster',
        beat([healthy(one), healthy('elsewhere.example')]),
        /^nodes\[1\]\.hostname: cluster cls_\w+ has no node elsewhere\.example$/,
      ],
      [
        'two endpoints for a lease of one node',
        () =>
          h.call(h.client.reportProvisioned, p.token, {
            ...report,
            sshEndpoints: [report.sshEndpoints[0]!, { hostname: two, endpoint }],
          }),
        /^ssh_endpoints has at most 1 entries \(lease lse_\w+ has 1 nodes\), got 2$/,
      ],
      [
        'two host keys for a lease of one node',
        () =>
          h.call(h.client.reportProvisioned, p.token, {
            ...report,
            sshHostKeys: [longestHostKey(), longestHostKey()],
          }),
        /^ssh_host_keys has at most 1 entries/,
      ],
      [
        'a host key over 4 KiB',
        () =>
          h.call(h.client.reportProvisioned, p.token, {
            ...report,
            sshHostKeys: [`${longestHostKey()}c`],
          }),
        /^ssh_host_keys\[0\] is at most 4096 bytes, got 4097$/,
      ],
      [
        'a kubeconfig over 64 KiB',
        () =>
          h.call(h.client.reportProvisioned, p.token, {
            ...report,
            kubeconfig: 'k'.repeat(64 * 1024 + 1),
          }),
        /^kubeconfig is at most 65536 bytes, got 65537$/,
      ],
      [
        'a long reason',
        () =>
          h.call(h.client.reportFailed, p.token, {
            clusterId: p.clusterId,
            leaseId,
            reason: 'r'.repeat(1025),
          }),
        /^reason is at most 1024 bytes, got 1025$/,
      ],
      [
        'an order id over 64 bytes',
        () =>
          h.call(h.client.withdrawSell, p.token, {
            clusterId: p.clusterId,
            orderId: `ord_${'0'.repeat(61)}`,
          }),
        /^order_id must be an id .*\(at most 64 bytes\)/,
      ],
      [
        'more nodes in a sell than a cluster has',
        () =>
          h.call(h.client.publishSell, p.token, {
            clusterId: p.clusterId,
            nodes: 1001,
            priceCents: 250,
            windowHours: 24,
          }),
        /^nodes must be 1 to the cluster's nodes/,
      ],
    ];
    for (const [what, call, message] of cases) {
      const f = await h.failure(call());
      expect({ what, code: f.code }).toEqual({ what, code: status.INVALID_ARGUMENT });
      expect(f.details, what).toMatch(message);
    }
    expect(await rows()).toBe(before);
  });
});
