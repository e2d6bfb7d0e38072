// The admin reads of the web console (issue 23, docs/api/admin.md):
// GET /v1/admin/fleet, /v1/admin/clusters/{id}/history, /v1/admin/leases and
// /v1/admin/platform/days. Node statuses and heartbeats are written here
// straight into `nodes`, as the agents' service does through its book
// writer; the reads only ever look at the database.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange();
});

afterAll(async () => {
  await ex?.close();
});

const admin = (method: string, url: string, body?: unknown) =>
  ex.call(method, url, ADMIN_TOKEN, body);

const GPU = {
  index: 0,
  name: 'NVIDIA H100 80GB HBM3',
  uuid: 'GPU-1',
  memoryTotalMib: 81_559,
  utilizationPercent: 37,
  temperatureC: 61,
};

/** A node's heartbeat as the agents' service records it: heard `ageMs` ago. */
async function heard(nodeId: string, status: string, ageMs: number, gpus: unknown[] = []) {
  await ex.db.query(
    `UPDATE nodes SET status = $2, last_heartbeat_at = to_timestamp($3::double precision / 1000),
            gpus = $4::jsonb WHERE id = $1`,
    [nodeId, status, ex.clock.now() - ageMs, JSON.stringify(gpus)],
  );
}

async function nodesOf(clusterId: string): Promise<string[]> {
  const rows = await ex.db.query<{ id: string }>(
    'SELECT id FROM nodes WHERE cluster_id = $1 ORDER BY hostname',
    [clusterId],
  );
  return rows.map((r) => r.id);
}

interface FleetNode {
  node_id: string;
  status: string;
  stale: boolean;
  heartbeat_age_seconds: number | null;
  gpus: unknown[];
}
interface FleetCluster {
  cluster_id: string;
  attention: boolean;
  nodes: FleetNode[];
  [k: string]: unknown;
}
interface FleetProvider {
  account_id: string;
  attention: boolean;
  clusters: FleetCluster[];
  earnings: { day: number; week: number; all: number };
}

describe('GET /v1/admin/fleet', () => {
  it('lists providers, clusters and nodes with offline and stale first, GPUs, sells, leases and earnings', async () => {
    const calm = await ex.party('fleet-calm');
    const calmCluster = await ex.cluster(calm, 1, 'b300', 'eu-west-1');
    const { provider, clusterId } = await ex.marketLease('fleet-trade');
    const troubled = await ex.party('fleet-troubled');
    const troubledCluster = await ex.cluster(troubled, 3, 'h200', 'us-east-1');
    await ex.db.query(
      'UPDATE clusters SET heartbeat_ms = 10000, agent_version = $2, provisioner = $3 WHERE id = $1',
      [troubledCluster, '1.4.0', 'kubernetes'],
    );
    const [fine, late, gone] = await nodesOf(troubledCluster);
    await heard(fine ?? '', 'online', 2_000, [GPU]);
    // The record is written at least every 30 s: stale past 30 s + 2 × 10 s.
    await heard(late ?? '', 'online', 55_000);
    await heard(gone ?? '', 'offline', 90_000);

    const r = await admin('GET', '/v1/admin/fleet');
    expect(r.status, r.body).toBe(200);
    const providers = r.json['providers'] as FleetProvider[];
    expect(providers[0]?.account_id).toBe(troubled.accountId);
    expect(providers[0]?.attention).toBe(true);
    const cluster = providers[0]?.clusters[0];
    expect(cluster).toMatchObject({
      cluster_id: troubledCluster,
      gpu_type: 'h200',
      zone: 'us-east-1',
      agent_version: '1.4.0',
      provisioner: 'kubernetes',
      heartbeat_seconds: 10,
      attention: true,
      nodes_online: 2,
      nodes_offline: 1,
      nodes_stale: 1,
    });
    expect(
      cluster?.nodes.map((n) => [n.node_id, n.status, n.stale, n.heartbeat_age_seconds]),
    ).toEqual([
      [gone, 'offline', false, 90],
      [late, 'online', true, 55],
      [fine, 'online', false, 2],
    ]);
    expect(cluster?.nodes[2]?.gpus).toEqual([
      { index: 0, model: GPU.name, memory_mib: 81_559, utilization_percent: 37, temperature_c: 61 },
    ]);

    const trader = providers.find((p) => p.account_id === provider.accountId);
    expect(trader?.attention).toBe(false);
    expect(trader?.clusters[0]).toMatchObject({
      cluster_id: clusterId,
      leases_provisioning: 1,
      leases_active: 0,
    });
    // 8 GPUs × 4 h × $2, less the 10 % fee (D2): the provider's proceeds.
    expect(trader?.earnings).toEqual({ day: 57.6, week: 57.6, all: 57.6 });
    const quiet = providers.find((p) => p.account_id === calm.accountId);
    expect(quiet?.clusters[0]).toMatchObject({
      cluster_id: calmCluster,
      attention: false,
      open_sells: 0,
      earnings: { day: 0, week: 0, all: 0 },
    });
  });

  it('is 403 for a customer', async () => {
    const p = await ex.party('fleet-nosy');
    expect((await ex.call('GET', '/v1/admin/fleet', p.token)).status).toBe(403);
  });
});

describe('GET /v1/admin/clusters/{id}/history', () => {
  it('shows the status changes of the nodes and the cordon, newest first', async () => {
    const p = await ex.party('history');
    const id = await ex.cluster(p, 1);
    const [node] = await nodesOf(id);
    await heard(node ?? '', 'online', 0);
    await heard(node ?? '', 'online', 0);
    await heard(node ?? '', 'offline', 0);
    expect(
      (await admin('POST', `/v1/admin/clusters/${id}/cordon`, { reason: 'test' })).status,
    ).toBe(200);

    const r = await admin('GET', `/v1/admin/clusters/${id}/history`);
    expect(r.status, r.body).toBe(200);
    expect(r.json).toMatchObject({ cluster_id: id, total: 3, limit: 20, offset: 0 });
    expect(
      (r.json['changes'] as Record<string, unknown>[]).map((c) => [
        c['field'],
        c['node_id'],
        c['before'],
        c['after'],
      ]),
    ).toEqual([
      ['cordon', null, 'uncordoned', 'cordoned'],
      ['status', node, 'online', 'offline'],
      ['status', node, 'available', 'online'],
    ]);
    expect((await admin('GET', '/v1/admin/clusters/cls_none/history')).status).toBe(404);
  });
});

describe('GET /v1/admin/leases', () => {
  it('lists provisioning leases with the time to their timeout, failed ones with why, ended ones with the revocation time', async () => {
    const stuck = await ex.marketLease('lists-stuck');
    ex.clock.advance(60_000);
    const provisioning = await admin('GET', '/v1/admin/leases?state=provisioning');
    expect(provisioning.status, provisioning.body).toBe(200);
    expect(provisioning.json['provisioning_timeout_seconds']).toBe(300);
    const item = (provisioning.json['leases'] as Record<string, unknown>[]).find(
      (l) => l['lease_id'] === stuck.leaseId,
    );
    expect(item).toMatchObject({
      status: 'provisioning',
      cluster_id: stuck.clusterId,
      provider_account_id: stuck.provider.accountId,
      customer_id: stuck.buyer.accountId,
      gpu_count: 8,
      hourly_cost: 16,
      age_seconds: 60,
      timeout_in_seconds: 240,
      failure: null,
    });

    const failedLease = await ex.marketLease('lists-failed');
    await admin('POST', `/v1/admin/leases/${failedLease.leaseId}/fail`, { reason: 'node on fire' });
    const failed = await admin('GET', '/v1/admin/leases?state=failed');
    expect(failed.json['leases']).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          lease_id: failedLease.leaseId,
          failure: 'operator: node on fire',
        }),
      ]),
    );

    const done = await ex.marketLease('lists-ended');
    await ex.leaseReady(done.leaseId, done.book);
    expect((await admin('GET', '/v1/admin/leases?state=active')).json['leases']).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ lease_id: done.leaseId, status: 'active' }),
      ]),
    );
    expect((await ex.call('DELETE', `/v1/leases/${done.leaseId}`, done.buyer.token)).status).toBe(
      200,
    );
    await ex.db.query(
      `INSERT INTO lease_access (lease_id, ssh_endpoints, ssh_host_keys, reported_ms, revoked_ms)
       VALUES ($1, '[]', '[]', $2, $3)`,
      [done.leaseId, ex.clock.now(), ex.clock.now() + 4_500],
    );
    const ended = await admin('GET', '/v1/admin/leases?state=ended');
    expect(ended.json['leases']).toEqual([
      expect.objectContaining({
        lease_id: done.leaseId,
        status: 'terminated',
        revocation_seconds: 4.5,
      }),
    ]);
    expect((await admin('GET', '/v1/admin/leases?state=gone')).status).toBe(400);
  });
});

describe('GET /v1/admin/platform/days', () => {
  it('shows the platform’s fees per day and a ledger that sums to zero', async () => {
    await ex.marketLease('days');
    const r = await admin('GET', '/v1/admin/platform/days');
    expect(r.status, r.body).toBe(200);
    const days = r.json['days'] as Record<string, number | string>[];
    expect(days[0]?.['day']).toBe(new Date().toISOString().slice(0, 10));
    expect(days[0]?.['fees']).toBeGreaterThan(0);
    expect(days.every((d) => d['ledger_sum'] === 0)).toBe(true);
    expect(r.json['ledger']).toMatchObject({ sum: 0, unbalanced_transactions: 0, balanced: true });
    expect((await admin('GET', '/v1/admin/platform/days?days=0')).status).toBe(400);
  });
});
