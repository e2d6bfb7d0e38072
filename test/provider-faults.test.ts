// Faults of the provider path across real processes (issue 12, D25, D29,
// D30): the built exchange on a fresh PostgreSQL database, the built agent
// (simulated provisioner) attached over gRPC and consuming its cluster's
// events from JetStream. The agent SIGKILLed mid-provisioning and restarted
// provisions the lease exactly once; a lease terminated while the agent was
// down, and a workspace nobody leased, are revoked by the reconciliation at
// start; a silent agent's nodes go offline and its unfilled sells are
// withdrawn, and come back with it; a wrong token or another provider's
// cluster is refused over gRPC; a private nats-server restarted during a
// burst of fills loses no lease. (The same rules are checked in-process by
// exchange/src/providers/grpc-server.db.test.ts and against a gRPC double by
// test/agent-process.test.ts; here the programs are the real ones.)

/* eslint-disable @typescript-eslint/unbound-method -- grpc() invokes each client method with the client as `this` */

import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { Metadata, credentials, status } from '@grpc/grpc-js';
import type { CallOptions, ServiceError } from '@grpc/grpc-js';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { AgentServiceClient } from '@gpux/proto';
import { newId } from '@gpux/shared';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startAgentProcess } from './support/agent-process.js';
import type { AgentProcess } from './support/agent-process.js';
import { PrivateNats } from './support/nats-server.js';
import { ProviderStack } from './support/provider-stack.js';

/** A market buy of one node (8 GPUs) that fills; its lease id. */
async function buyNode(stack: ProviderStack, token = stack.buyer.token, hours = 2) {
  const order = await stack.buyNode(token, hours);
  expect(order['status']).toBe('filled');
  return order['lease_id'] as string;
}

/** One query on the stack's database (what the exchange keeps). */
async function query<T>(stack: ProviderStack, sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: stack.database.url });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows as T[];
  } finally {
    await c.end();
  }
}

/** The lease ids with a workspace in the agent's state directory (simulated provisioner). */
function workspaces(stack: ProviderStack): string[] {
  const dir = join(stack.agentStateDir, 'workspaces');
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

/** The agent's status.json (rewritten at every heartbeat and reconciliation). */
function agentStatus(stack: ProviderStack): { lastReconcile?: { atMs: number; ok: boolean } } {
  try {
    return JSON.parse(readFileSync(join(stack.agentStateDir, 'status.json'), 'utf8')) as {
      lastReconcile?: { atMs: number; ok: boolean };
    };
  } catch {
    return {}; // being replaced, or not written yet
  }
}

/** Until the agent has run a whole reconciliation that started after now. */
async function aReconciliationLater(stack: ProviderStack): Promise<void> {
  const after = Date.now();
  await stack.waitFor('a later reconciliation', () => {
    const r = agentStatus(stack).lastReconcile;
    return r !== undefined && r.ok && r.atMs > after;
  });
}

function loggedFor(agent: AgentProcess | undefined, msg: string, leaseId: string) {
  return (agent?.logged(msg) ?? []).filter((l) => l['leaseId'] === leaseId);
}

interface NodeRow {
  readonly hostname: string;
  readonly status: string;
}

async function clusterNodes(stack: ProviderStack, clusterId = stack.clusterId) {
  const list = await stack.ok('GET', '/v1/admin/clusters', stack.adminToken);
  const cluster = (list['clusters'] as { cluster_id: string; nodes: NodeRow[] }[]).find(
    (c) => c.cluster_id === clusterId,
  );
  return cluster?.nodes ?? [];
}

/** An active lease of the stack's buyer: one left by an earlier test, or a new one. */
async function activeLease(stack: ProviderStack): Promise<string> {
  const list = await stack.ok('GET', '/v1/leases?status=active', stack.buyer.token);
  const [lease] = list['leases'] as { lease_id: string }[];
  if (lease !== undefined) return lease.lease_id;
  await stack.waitForAsks(8);
  const leaseId = await buyNode(stack);
  await stack.waitForLease(leaseId);
  return leaseId;
}

async function pendingSells(stack: ProviderStack): Promise<string[]> {
  const o = await stack.ok(
    'GET',
    '/v1/orders?side=sell&status=pending&limit=100',
    stack.provider.token,
  );
  return (o['orders'] as { order_id: string }[]).map((x) => x.order_id);
}

describe('the agent and the exchange as processes, under faults', () => {
  let stack: ProviderStack;

  beforeAll(async () => {
    stack = await ProviderStack.start({
      nodes: ['f-1', 'f-2', 'f-3'],
      askPrice: '2.50',
      label: 'gpux_e2e_faults',
      // D30: an event the killed agent never acked comes again after 5 s, not 30.
      exchangeEnv: { GPUX_NATS_ACK_WAIT_SECONDS: '5' },
    });
  });

  afterAll(async () => {
    // A test that failed while the agent was stopped must not leave it stopped.
    stack?.agent?.child.kill('SIGCONT');
    await stack?.close();
  });

  it('SIGKILLed mid-provisioning and restarted, the agent provisions the lease exactly once (D30)', async () => {
    // The agent again, slowed down: the lease stays in provisioning long enough to kill it there.
    await stack.stopAgent();
    await stack.startAgent({ GPUX_SIMULATED_PROVISION_DELAY_MS: '600000' });
    await stack.waitForAsks(8);
    const leaseId = await buyNode(stack);
    const record = join(stack.agentStateDir, 'workspaces', leaseId, 'lease.json');
    await stack.waitFor('provisioning under way', () => existsSync(record));
    const killed = stack.agent;
    expect(await stack.stopAgent('SIGKILL')).toBeNull();
    expect(loggedFor(killed, 'lease provisioned and reported', leaseId)).toEqual([]);
    expect((await stack.ok('GET', `/v1/leases/${leaseId}`, stack.buyer.token))['status']).toBe(
      'provisioning',
    );

    // Restarted at full speed: its reconciliation at start finishes the lease.
    const agent = await stack.startAgent();
    const lease = await stack.waitForLease(leaseId);
    expect(lease['ssh_endpoints']).toEqual([
      expect.stringMatching(new RegExp(`@127\\.0\\.0\\.1:${agent.sshPort}$`)) as string,
    ]);
    // The event the killed agent never acked comes again (after the consumer's 5 s ack wait):
    // harmless, nothing is made or reported twice.
    await stack.waitFor(
      'the provision event delivered again',
      () => loggedFor(agent, 'lease.provision handled', leaseId)[0],
      90_000,
      100,
    );
    const [{ reported_ms: reportedMs } = { reported_ms: '' }] = await query<{
      reported_ms: string;
    }>(stack, 'SELECT reported_ms FROM lease_access WHERE lease_id = $1', [leaseId]);
    await aReconciliationLater(stack);

    // One workspace, one report (the agent's log across both processes, and the
    // exchange's access row untouched since), one charge.
    expect(workspaces(stack)).toEqual([leaseId]);
    expect([
      ...loggedFor(killed, 'lease provisioned and reported', leaseId),
      ...loggedFor(agent, 'lease provisioned and reported', leaseId),
    ]).toHaveLength(1);
    expect(
      await query(stack, 'SELECT reported_ms, revoked_ms FROM lease_access WHERE lease_id = $1', [
        leaseId,
      ]),
    ).toEqual([{ reported_ms: reportedMs, revoked_ms: null }]);
    const charges = (await stack.transactions(stack.buyer)).filter((t) => t.lease_id === leaseId);
    expect(charges.map((t) => t.kind).sort()).toEqual(['buyer_charge', 'buyer_fee']);
    const proceeds = (await stack.transactions(stack.provider)).filter(
      (t) => t.lease_id === leaseId,
    );
    expect(proceeds.map((t) => t.kind).sort()).toEqual(['seller_fee', 'seller_proceeds']);
    expect(await stack.ok('GET', `/v1/leases/${leaseId}`, stack.buyer.token)).toMatchObject({
      status: 'active',
    });
  }, 150_000);

  it('a lease terminated while the agent was down, and a workspace nobody leased, are revoked by the reconciliation at start (D30)', async () => {
    await stack.waitForAsks(8);
    const ended = await buyNode(stack);
    await stack.waitForLease(ended);
    const live = workspaces(stack).filter((id) => id !== ended);
    expect(await stack.stopAgent('SIGKILL')).toBeNull();

    // Meanwhile: the lease is terminated (its revoke event waits in the stream), and a
    // workspace appears that no lease of the exchange has, laid out as the simulated
    // provisioner lays one out, its record never written.
    const t = await stack.ok('DELETE', `/v1/leases/${ended}`, stack.buyer.token);
    expect(t['status']).toBe('terminated');
    const orphan = newId('lse_');
    mkdirSync(join(stack.agentStateDir, 'workspaces', orphan, `lse-${orphan.slice(4)}-1`), {
      recursive: true,
    });

    // Ready means reconciled once and only then consuming events: the reconciliation did it.
    const agent = await stack.startAgent();
    const revokedByReconciliation = agent
      .logged('reconciliation: workspace without a live lease')
      .map((l) => l['leaseId']);
    expect(revokedByReconciliation.sort()).toEqual([ended, orphan].sort());
    expect(workspaces(stack)).toEqual(live);
    // The exchange was told (ReportRevoked) and keeps no kubeconfig of it (D28).
    const [access] = await query<{ revoked_ms: string | null; kubeconfig_sealed: unknown }>(
      stack,
      'SELECT revoked_ms, kubeconfig_sealed FROM lease_access WHERE lease_id = $1',
      [ended],
    );
    expect(access?.revoked_ms).not.toBeNull();
    expect(access?.kubeconfig_sealed).toBeNull();
    // The live lease was not touched.
    for (const id of live) {
      expect(await stack.ok('GET', `/v1/leases/${id}`, stack.buyer.token)).toMatchObject({
        status: 'active',
      });
      expect(existsSync(join(stack.agentStateDir, 'workspaces', id, 'kubeconfig.yaml'))).toBe(true);
    }
  }, 60_000);

  it('a silent agent: its nodes go offline and its unfilled sells are withdrawn; back online when it returns (D29)', async () => {
    const agent = stack.agent as AgentProcess;
    const leaseId = await activeLease(stack);
    // Every free node listed, every node online.
    const free = (await clusterNodes(stack)).length - workspaces(stack).length;
    await stack.waitFor(
      `${free} sells listed`,
      async () => (await pendingSells(stack)).length === free,
    );
    const sells = await pendingSells(stack);

    agent.child.kill('SIGSTOP');
    try {
      await stack.waitFor('every node offline', async () =>
        (await clusterNodes(stack)).every((n) => n.status === 'offline'),
      );
      for (const id of sells) {
        expect(await stack.ok('GET', `/v1/orders/${id}`, stack.provider.token)).toMatchObject({
          status: 'cancelled',
          cancel_reason: 'nodes_offline',
        });
      }
      const book = await stack.ok(
        'GET',
        `/v1/orderbook?gpu_type=${stack.gpuType}&zone=${stack.zone}`,
        stack.buyer.token,
      );
      expect(book['asks']).toEqual([]);
      // The live lease stays active; its read shows its node offline.
      const lease = await stack.ok('GET', `/v1/leases/${leaseId}`, stack.buyer.token);
      expect(lease).toMatchObject({ status: 'active' });
      expect(lease['node_status']).toEqual([
        { hostname: (lease['nodes'] as string[])[0], status: 'offline' },
      ]);
    } finally {
      agent.child.kill('SIGCONT');
    }

    await stack.waitFor('every node online again', async () =>
      (await clusterNodes(stack)).every((n) => n.status === 'online'),
    );
    // And the free nodes listed again, by new sells.
    await stack.waitFor(
      `${free} sells listed again`,
      async () => (await pendingSells(stack)).length === free,
    );
    expect((await pendingSells(stack)).filter((id) => sells.includes(id))).toEqual([]);
    expect(agent.child.exitCode).toBeNull();
  }, 60_000);

  it("a wrong token or another provider's cluster is refused over gRPC; the agent stops on it", async () => {
    const other = await stack.createAccount('other-farm', ['trade', 'read', 'leases', 'provider']);
    const c = await stack.ok('POST', '/v1/admin/clusters', stack.adminToken, {
      provider_account_id: other.accountId,
      gpu_type: stack.gpuType,
      zone: stack.zone,
      nodes: [{ hostname: 'o-1' }],
    });
    const otherCluster = c['cluster_id'] as string;
    const leaseId = await activeLease(stack);

    // The agent process: refused at Attach, it exits 1 with one clear line.
    const refused = async (token: string, clusterId: string): Promise<string> => {
      const state = join(stack.dir, `refused-${newId('lse_')}`);
      const agent = await startAgentProcess(
        {
          ...stack.agentEnv(),
          EXCHANGE_GRPC_URL: stack.grpcUrl,
          NATS_URL: stack.natsUrl,
          GPUX_TOKEN: token,
          GPUX_CLUSTER_ID: clusterId,
          GPUX_STATE_DIR: state,
          GPUX_SSH_LISTEN: '127.0.0.1:0',
        },
        { waitReady: false },
      );
      const code = await agent.exited();
      expect(code, agent.output()).toBe(1);
      return agent.output();
    };
    const unknown = await refused('gpux_this-token-was-never-issued', stack.clusterId);
    expect(unknown).toContain(
      'gpux agent: the exchange refused Attach: UNAUTHENTICATED: unknown or revoked token\n',
    );
    const foreign = await refused(stack.provider.token, otherCluster);
    expect(foreign).toContain(
      `gpux agent: the exchange refused Attach: PERMISSION_DENIED: cluster ${otherCluster} is not this provider's\n`,
    );

    // Directly with the generated client: another provider may neither read this
    // cluster's leases nor report one of them revoked; a buyer's token is no provider's.
    const client = new AgentServiceClient(stack.grpcUrl, credentials.createInsecure());
    const grpc = <Req, Res>(
      method: (
        req: Req,
        md: Metadata,
        options: Partial<CallOptions>,
        cb: (err: ServiceError | null, res: Res) => void,
      ) => unknown,
      token: string,
      request: Req,
    ): Promise<status> => {
      const md = new Metadata();
      md.set('authorization', `Bearer ${token}`);
      return new Promise((resolve) => {
        method.call(client, request, md, {}, (err) => resolve(err?.code ?? status.OK));
      });
    };
    try {
      expect(await grpc(client.listLeases, other.token, { clusterId: stack.clusterId })).toBe(
        status.PERMISSION_DENIED,
      );
      expect(
        await grpc(client.reportRevoked, other.token, { clusterId: stack.clusterId, leaseId }),
      ).toBe(status.PERMISSION_DENIED);
      expect(
        await grpc(client.reportRevoked, other.token, { clusterId: otherCluster, leaseId }),
      ).not.toBe(status.OK);
      expect(await grpc(client.listLeases, stack.buyer.token, { clusterId: stack.clusterId })).toBe(
        status.PERMISSION_DENIED,
      );
      expect(
        await grpc(client.listLeases, 'gpux_this-token-was-never-issued', {
          clusterId: stack.clusterId,
        }),
      ).toBe(status.UNAUTHENTICATED);
      expect(await grpc(client.listLeases, stack.provider.token, { clusterId: otherCluster })).toBe(
        status.PERMISSION_DENIED,
      );
      // The provider's own call still works, and the lease is as it was.
      expect(
        await grpc(client.listLeases, stack.provider.token, { clusterId: stack.clusterId }),
      ).toBe(status.OK);
      expect(await stack.ok('GET', `/v1/leases/${leaseId}`, stack.buyer.token)).toMatchObject({
        status: 'active',
      });
    } finally {
      client.close();
    }
  }, 60_000);
});

describe('a private nats-server restarted during a burst of fills', () => {
  const NODES = 6;
  let nats: PrivateNats;
  let stack: ProviderStack;

  beforeAll(async () => {
    nats = await PrivateNats.start();
    stack = await ProviderStack.start({
      nodes: Array.from({ length: NODES }, (_, i) => `n-${i + 1}`),
      askPrice: '2.50',
      natsUrl: nats.url,
      label: 'gpux_e2e_natsburst',
    });
  });

  afterAll(async () => {
    await stack?.close();
    await nats?.stop();
    if (nats !== undefined) rmSync(dirname(nats.storeDir), { recursive: true, force: true });
  });

  it('every lease still becomes active, each provisioned once, and every event reaches the stream once', async () => {
    await stack.waitForAsks(8 * NODES);
    // A third of the fills as the server goes down, a third while it is down (their
    // events wait in the outbox), a third as it comes back.
    const third = NODES / 3;
    const buys = (): Promise<string[]> =>
      Promise.all(Array.from({ length: third }, () => buyNode(stack)));
    const [asItStops] = await Promise.all([buys(), nats.stop()]);
    const whileDown = await buys();
    const [asItResumes] = await Promise.all([buys(), nats.resume()]);
    const leases = [...asItStops, ...whileDown, ...asItResumes];
    expect(new Set(leases).size).toBe(NODES);

    for (const id of leases) await stack.waitForLease(id, stack.buyer.token, 'active', 60_000);
    // Every provision event published once, and handled by the agent.
    await stack.waitFor(
      'the outbox published',
      async () =>
        (await query(stack, 'SELECT 1 FROM outbox WHERE published_ms IS NULL')).length === 0,
      60_000,
    );
    const [{ n = '0' } = {}] = await query<{ n: string }>(
      stack,
      'SELECT count(*) AS n FROM outbox',
    );
    const nc = await connect({ servers: nats.url });
    try {
      const info = await (await jetstreamManager(nc)).streams.info(stack.natsStream);
      expect(info.state.messages).toBe(Number(n));
    } finally {
      await nc.close();
    }
    const agent = stack.agent;
    for (const id of leases) {
      await stack.waitFor(
        `the provision event of ${id} handled`,
        () => loggedFor(agent, 'lease.provision handled', id).length > 0,
      );
      expect(loggedFor(agent, 'lease provisioned and reported', id)).toHaveLength(1);
    }
    expect(workspaces(stack)).toEqual([...leases].sort());
    // The same agent process throughout: it lost its server and came back to it.
    await stack.waitFor('the reconnect in its log', () => agent?.logged('NATS reconnect')[0]);
    expect(agent?.child.exitCode).toBeNull();
  }, 150_000);
});
