// The agents' gRPC service (D29) over a real gRPC connection on loopback,
// against the exchange's books on this machine's PostgreSQL.

/* eslint-disable @typescript-eslint/unbound-method -- call() invokes each client method with the client as `this` */

import { status } from '@grpc/grpc-js';
import type { ServiceError } from '@grpc/grpc-js';
import { NodeStatus } from '@gpux/proto';
import { HOUR_MS } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { balanceOf } from '../ledger/ledger.js';
import { ADMIN_TOKEN } from '../market/testing/test-exchange.js';
import type { TestExchange } from '../market/testing/test-exchange.js';
import { agentHarness } from './testing/agent-harness.js';
import type { AgentHarness, Provider } from './testing/agent-harness.js';

let h: AgentHarness;
let ex: TestExchange;

beforeAll(async () => {
  h = await agentHarness();
  ex = h.ex;
});

afterAll(async () => {
  await h?.close();
});

const call: AgentHarness['call'] = (method, token, request) => h.call(method, token, request);

async function code(p: Promise<unknown>): Promise<status | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return (err as ServiceError).code;
  }
}

const provider = (nodes: number, gpuType?: string, zone?: string): Promise<Provider> =>
  h.provider(nodes, gpuType, zone);

const attach = (p: Provider) => h.attach(p);

describe('the agents gRPC service (D29)', () => {
  it("refuses a wrong token, a token without the provider scope, and another provider's cluster", async () => {
    const p = await provider(1);
    const other = await provider(1);
    const customer = await ex.account('customer', { scopes: ['trade', 'read'] });
    const req = {
      clusterId: p.clusterId,
      heartbeatIntervalSeconds: 5,
      agentVersion: '',
      provisioner: 'simulated',
      host: undefined,
    };
    expect(await code(call(h.client.attach, 'gpux_nonsense', req))).toBe(status.UNAUTHENTICATED);
    expect(await code(call(h.client.attach, customer.token, req))).toBe(status.PERMISSION_DENIED);
    expect(await code(call(h.client.attach, other.token, req))).toBe(status.PERMISSION_DENIED);
    expect(
      await code(call(h.client.attach, p.token, { ...req, clusterId: 'cls_nosuchcluster' })),
    ).toBe(status.NOT_FOUND);
    expect(
      await code(call(h.client.attach, p.token, { ...req, heartbeatIntervalSeconds: 0 })),
    ).toBe(status.INVALID_ARGUMENT);
  });

  it("attach names the agent's event source; heartbeats bring nodes online with their GPUs", async () => {
    const p = await provider(2);
    const a = await attach(p);
    expect(a).toMatchObject({
      clusterId: p.clusterId,
      gpuType: 'h100',
      zone: 'us-west-1',
      offlineAfterSeconds: 15,
      events: {
        stream: 'GPUX_EVENTS',
        consumer: `agent_${p.clusterId}`,
        filterSubject: `gpux.cluster.${p.clusterId}.>`,
      },
    });
    expect(a.nodes.map((n) => n.status)).toEqual([
      NodeStatus.NODE_STATUS_AVAILABLE,
      NodeStatus.NODE_STATUS_AVAILABLE,
    ]);
    const gpu = {
      index: 0,
      name: 'NVIDIA H100 80GB HBM3',
      uuid: 'GPU-1',
      memoryTotalMib: 81_559,
      utilizationPercent: 0,
      temperatureC: 31,
    };
    const hb = await call(h.client.heartbeat, p.token, {
      clusterId: p.clusterId,
      nodes: a.nodes.map((n) => ({
        hostname: n.hostname,
        healthy: true,
        problem: '',
        gpus: [gpu],
      })),
    });
    expect(hb.nodes.map((n) => n.status)).toEqual([
      NodeStatus.NODE_STATUS_ONLINE,
      NodeStatus.NODE_STATUS_ONLINE,
    ]);
    // Heartbeats' facts are written in batches (agent-front.ts).
    await h.server.front.flush();
    const [row] = await ex.db.query<{ gpus: unknown }>(
      'SELECT gpus FROM nodes WHERE cluster_id = $1 LIMIT 1',
      [p.clusterId],
    );
    expect(row?.gpus).toEqual([gpu]);
  });

  it('sells through the book: listed, refused by the collar as an answer, withdrawn', async () => {
    const p = await provider(3, 'h200', 'eu-west-1');
    await attach(p);
    const placed = await call(h.client.publishSell, p.token, {
      clusterId: p.clusterId,
      nodes: 1,
      priceCents: 300,
      windowHours: 168,
    });
    expect(placed.result?.$case).toBe('order');
    const order = placed.result?.$case === 'order' ? placed.result.value : undefined;
    expect(order).toMatchObject({ nodes: 1, priceCents: 300, remainingNodes: 1 });
    // A trade at $3 sets the reference: $9 is outside the collar (D15), an answer not an error.
    const buyer = await ex.account('collar-buyer');
    expect(
      (
        await ex.call('POST', '/v1/orders', buyer.token, {
          side: 'buy',
          gpu_type: 'h200',
          zone: 'eu-west-1',
          gpu_count: 8,
          duration_hours: 1,
        })
      ).status,
    ).toBe(200);
    const refused = await call(h.client.publishSell, p.token, {
      clusterId: p.clusterId,
      nodes: 1,
      priceCents: 900,
      windowHours: 168,
    });
    expect(refused.result).toMatchObject({
      $case: 'refusal',
      value: { code: 'price_out_of_collar' },
    });
    const again = await call(h.client.publishSell, p.token, {
      clusterId: p.clusterId,
      nodes: 1,
      priceCents: 310,
      windowHours: 168,
    });
    const id = again.result?.$case === 'order' ? again.result.value.orderId : '';
    expect(
      (await call(h.client.listSells, p.token, { clusterId: p.clusterId })).orders.map(
        (o) => o.orderId,
      ),
    ).toEqual([id]);
    expect(
      (await call(h.client.withdrawSell, p.token, { clusterId: p.clusterId, orderId: id }))
        .cancelledNodes,
    ).toBe(1);
    expect(
      (await call(h.client.withdrawSell, p.token, { clusterId: p.clusterId, orderId: id }))
        .cancelledNodes,
    ).toBe(0);
    expect((await call(h.client.listSells, p.token, { clusterId: p.clusterId })).orders).toEqual(
      [],
    );
    // An order or a lease the cluster does not have is NOT_FOUND (never re-sent as is).
    expect(
      await code(
        call(h.client.withdrawSell, p.token, {
          clusterId: p.clusterId,
          orderId: 'ord_nosuchorder',
        }),
      ),
    ).toBe(status.NOT_FOUND);
    expect(
      await code(
        call(h.client.reportRevoked, p.token, {
          clusterId: p.clusterId,
          leaseId: 'lea_nosuchlease',
        }),
      ),
    ).toBe(status.NOT_FOUND);
  });

  it('lists a bought lease with its key snapshot; a provisioned report makes it active with its access sealed', async () => {
    const p = await provider(1, 'b200', 'us-east-1');
    await attach(p);
    await call(h.client.publishSell, p.token, {
      clusterId: p.clusterId,
      nodes: 1,
      priceCents: 200,
      windowHours: 168,
    });
    const buyer = await ex.account('lease-buyer');
    const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFlIMmyFnHK4frjyOGUIT3IthFXFGYi7+K7mXLlcCaXt';
    await ex.call('POST', '/v1/ssh_keys', buyer.token, { name: 'k', public_key: key });
    const bought = await ex.call('POST', '/v1/orders', buyer.token, {
      side: 'buy',
      gpu_type: 'b200',
      zone: 'us-east-1',
      gpu_count: 8,
      duration_hours: 3,
    });
    const leaseId = bought.json['lease_id'] as string;
    const listed = await call(h.client.listLeases, p.token, { clusterId: p.clusterId });
    const user = leaseId.replace('_', '-');
    expect(listed.leases).toEqual([
      expect.objectContaining({
        leaseId,
        leaseUser: user,
        gpuCount: 8,
        sshPublicKeys: [key],
        status: 'provisioning',
        endTime: new Date(ex.clock.now() + 3 * HOUR_MS),
      }),
    ]);
    const node = listed.leases[0]?.nodes[0];
    expect(node?.sshUser).toBe(`${user}-1`);
    const reported = await call(h.client.reportProvisioned, p.token, {
      clusterId: p.clusterId,
      leaseId,
      sshEndpoints: [{ hostname: node?.hostname ?? '', endpoint: `${user}-1@127.0.0.1:2222` }],
      sshHostKeys: [key],
      kubeconfig: 'apiVersion: v1\nkind: Config\n',
    });
    expect(reported.leaseStatus).toBe('active');
    const [access] = await ex.db.query<{ kubeconfig_sealed: Buffer }>(
      'SELECT kubeconfig_sealed FROM lease_access WHERE lease_id = $1',
      [leaseId],
    );
    expect(access?.kubeconfig_sealed.includes(Buffer.from('kind: Config'))).toBe(false);
    expect(h.ctx.secrets.open(access?.kubeconfig_sealed ?? Buffer.alloc(0), leaseId)).toBe(
      'apiVersion: v1\nkind: Config\n',
    );
    // Reported again (a refreshed token, D28): the buyer's lease.kubeconfig_refreshed (issue 22).
    const again = await call(h.client.reportProvisioned, p.token, {
      clusterId: p.clusterId,
      leaseId,
      sshEndpoints: [{ hostname: node?.hostname ?? '', endpoint: `${user}-1@127.0.0.1:2222` }],
      sshHostKeys: [key],
      kubeconfig: 'apiVersion: v1\nkind: Config\n# refreshed\n',
    });
    expect(again.leaseStatus).toBe('active');
    await ex.numberEvents();
    const events = await ex.db.query<{ kind: string }>(
      'SELECT kind FROM account_events WHERE account_id = $1 ORDER BY seq',
      [buyer.accountId],
    );
    expect(events.map((e) => e.kind).slice(-2)).toEqual([
      'lease.active',
      'lease.kubeconfig_refreshed',
    ]);
    // The buyer terminates; the revoked report clears the kubeconfig.
    expect((await ex.call('DELETE', `/v1/leases/${leaseId}`, buyer.token)).status).toBe(200);
    expect(
      (await call(h.client.reportRevoked, p.token, { clusterId: p.clusterId, leaseId }))
        .leaseStatus,
    ).toBe('terminated');
    const [after] = await ex.db.query<{
      kubeconfig_sealed: Buffer | null;
      revoked_ms: number | null;
    }>('SELECT kubeconfig_sealed, revoked_ms FROM lease_access WHERE lease_id = $1', [leaseId]);
    expect(after).toEqual({ kubeconfig_sealed: null, revoked_ms: ex.clock.now() });
  });

  it('D25: a lease the agent reports failed fails at once with the full refund', async () => {
    const p = await provider(1, 'b300', 'us-west-1');
    await attach(p);
    await call(h.client.publishSell, p.token, {
      clusterId: p.clusterId,
      nodes: 1,
      priceCents: 200,
      windowHours: 168,
    });
    const buyer = await ex.account('failed-buyer');
    const bought = await ex.call('POST', '/v1/orders', buyer.token, {
      side: 'buy',
      gpu_type: 'b300',
      zone: 'us-west-1',
      gpu_count: 8,
      duration_hours: 2,
    });
    const leaseId = bought.json['lease_id'] as string;
    expect(await balanceOf(ex.db, buyer.accountId)).toBe(-(3200 + 320));
    const r = await call(h.client.reportFailed, p.token, {
      clusterId: p.clusterId,
      leaseId,
      reason: 'no GPU',
    });
    expect(r.leaseStatus).toBe('failed');
    expect(await balanceOf(ex.db, buyer.accountId)).toBe(0);
  });

  it('D29: nodes silent for 3 intervals go offline and their sells are withdrawn; a heartbeat brings them back', async () => {
    const p = await provider(2, 'h100', 'eu-west-1');
    const a = await attach(p);
    const beat = () =>
      call(h.client.heartbeat, p.token, {
        clusterId: p.clusterId,
        nodes: a.nodes.map((n) => ({ hostname: n.hostname, healthy: true, problem: '', gpus: [] })),
      });
    await beat();
    await call(h.client.publishSell, p.token, {
      clusterId: p.clusterId,
      nodes: 2,
      priceCents: 250,
      windowHours: 168,
    });
    ex.clock.advance(14_000);
    await h.server.front.sweep();
    expect(
      (await call(h.client.listSells, p.token, { clusterId: p.clusterId })).orders,
    ).toHaveLength(1);
    ex.clock.advance(2_000);
    expect(await h.server.front.sweep()).toBeGreaterThanOrEqual(2);
    const statuses = await ex.db.query<{ status: string }>(
      'SELECT status FROM nodes WHERE cluster_id = $1',
      [p.clusterId],
    );
    expect(statuses.map((n) => n.status)).toEqual(['offline', 'offline']);
    expect((await call(h.client.listSells, p.token, { clusterId: p.clusterId })).orders).toEqual(
      [],
    );
    const [cancelled] = await ex.db.query<{ cancel_reason: string }>(
      "SELECT cancel_reason FROM orders WHERE cluster_id = $1 AND side = 'sell'",
      [p.clusterId],
    );
    expect(cancelled?.cancel_reason).toBe('nodes_offline');
    expect((await beat()).nodes.map((n) => n.status)).toEqual([
      NodeStatus.NODE_STATUS_ONLINE,
      NodeStatus.NODE_STATUS_ONLINE,
    ]);
  });

  it('a cordoned cluster: its sells withdrawn, a new one refused with cluster_cordoned as an answer; uncordoned, taken again', async () => {
    const p = await provider(2, 'h200', 'us-west-1');
    await attach(p);
    const publish = () =>
      call(h.client.publishSell, p.token, {
        clusterId: p.clusterId,
        nodes: 1,
        priceCents: 250,
        windowHours: 168,
      });
    expect((await publish()).result?.$case).toBe('order');
    const admin = (action: string) =>
      ex.call('POST', `/v1/admin/clusters/${p.clusterId}/${action}`, ADMIN_TOKEN, {
        reason: 'rack maintenance',
      });
    expect((await admin('cordon')).json['cancelled_order_ids']).toHaveLength(1);
    expect((await call(h.client.listSells, p.token, { clusterId: p.clusterId })).orders).toEqual(
      [],
    );
    // A refusal of the book, as the collar's: the agent keeps it in its
    // status and asks again at its next round (agent/src/selling/seller.ts).
    const refused = await publish();
    expect(refused.result).toMatchObject({
      $case: 'refusal',
      value: { code: 'cluster_cordoned' },
    });
    expect((await admin('uncordon')).status).toBe(200);
    expect((await publish()).result?.$case).toBe('order');
  });
});
