// The agents' side of the exchange's /metrics (issue 23, docs/metrics.md):
// gRPC calls by method and status code, and a lease's provisioning and
// revocation durations as the agent's reports show them.

/* eslint-disable @typescript-eslint/unbound-method -- h.call() invokes each client method with the client as `this` */

import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { METRICS_TOKEN } from '../market/testing/test-exchange.js';
import { agentHarness } from '../providers/testing/agent-harness.js';
import type { AgentHarness } from '../providers/testing/agent-harness.js';

let h: AgentHarness;

beforeAll(async () => {
  h = await agentHarness();
});

afterAll(async () => {
  await h?.close();
});

async function value(series: string): Promise<number | undefined> {
  const r = await h.ex.call('GET', '/metrics', METRICS_TOKEN);
  const line = r.body.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("the agents' calls in /metrics", () => {
  it('counts calls by method and code, and times provisioning and revocation', async () => {
    const p = await h.provider(1, 'b300', 'eu-west-1');
    await h.attach(p);
    expect(await value('gpux_grpc_calls_total{method="Attach",code="OK"}')).toBe(1);
    const refused = await h.failure(
      h.call(h.client.listLeases, 'no-such-token', { clusterId: p.clusterId }),
    );
    expect(refused.code).toBe(status.UNAUTHENTICATED);
    expect(await value('gpux_grpc_calls_total{method="ListLeases",code="UNAUTHENTICATED"}')).toBe(
      1,
    );

    await h.call(h.client.publishSell, p.token, {
      clusterId: p.clusterId,
      nodes: 1,
      priceCents: 200,
      windowHours: 168,
    });
    const buyer = await h.ex.account('grpc-metrics-buyer');
    const bought = await h.ex.call('POST', '/v1/orders', buyer.token, {
      side: 'buy',
      gpu_type: 'b300',
      zone: 'eu-west-1',
      gpu_count: 8,
      duration_hours: 3,
    });
    const leaseId = bought.json['lease_id'] as string;
    const listed = await h.call(h.client.listLeases, p.token, { clusterId: p.clusterId });
    const node = listed.leases[0]?.nodes[0];
    h.ex.clock.advance(40_000);
    await h.call(h.client.reportProvisioned, p.token, {
      clusterId: p.clusterId,
      leaseId,
      sshEndpoints: [{ hostname: node?.hostname ?? '', endpoint: `u-1@127.0.0.1:2222` }],
      sshHostKeys: [
        'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFlIMmyFnHK4frjyOGUIT3IthFXFGYi7+K7mXLlcCaXt',
      ],
      kubeconfig: '',
    });
    // 40 s: in the 60 s bucket, not the 30 s one.
    expect(await value('gpux_lease_provisioning_duration_seconds_count')).toBe(1);
    expect(await value('gpux_lease_provisioning_duration_seconds_bucket{le="30"}')).toBe(0);
    expect(await value('gpux_lease_provisioning_duration_seconds_bucket{le="60"}')).toBe(1);

    expect((await h.ex.call('DELETE', `/v1/leases/${leaseId}`, buyer.token)).status).toBe(200);
    h.ex.clock.advance(10_000);
    expect(await value('gpux_oldest_unconfirmed_revocation_seconds')).toBe(10);
    await h.call(h.client.reportRevoked, p.token, { clusterId: p.clusterId, leaseId });
    // Told twice: timed once.
    await h.call(h.client.reportRevoked, p.token, { clusterId: p.clusterId, leaseId });
    expect(await value('gpux_lease_revocation_duration_seconds_count')).toBe(1);
    expect(await value('gpux_lease_revocation_duration_seconds_sum')).toBe(10);
    expect(await value('gpux_oldest_unconfirmed_revocation_seconds')).toBe(0);
    expect(await value('gpux_grpc_calls_total{method="ReportRevoked",code="OK"}')).toBe(2);
  });
});
