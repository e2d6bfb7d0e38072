// Issue 18: heartbeats are state, not commands (agent-front.ts). Parallel
// heartbeats of many clusters, and many of one cluster (its share set high,
// so that every one is taken), all answer OK, cost no statement of their
// own and few messages to the market, and never deadlock (before, 2,000
// parallel heartbeats of one provider failed with 40P01). Their facts are
// written in one statement; a status change still goes through the book.

/* eslint-disable @typescript-eslint/unbound-method -- h.call() invokes each client method with the client as `this` */

import { NodeStatus } from '@gpux/proto';
import type { HeartbeatRequest } from '@gpux/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Logger } from '../logger.js';
import { DEFAULT_AGENT_SHARE } from './agent-share.js';
import { agentHarness } from './testing/agent-harness.js';
import type { AgentHarness, Provider } from './testing/agent-harness.js';

/** Every error the service or the market logs. */
const errors: unknown[] = [];
const nothing = (): void => undefined;
const logger: Logger = {
  error: (obj: object | string, msg?: string) => errors.push({ obj, msg }),
  warn: nothing,
  info: nothing,
  debug: nothing,
};

let h: AgentHarness;
/** Statements the agents' service ran, and those that wrote heartbeats. */
let statements = 0;
let writes = 0;
/** Messages the service sent the market with nodes' reports. */
let reports = 0;

beforeAll(async () => {
  h = await agentHarness({
    logger,
    exchange: { logger },
    server: {
      limits: {
        ...DEFAULT_AGENT_SHARE,
        heartbeatsPerInterval: 1_000_000,
        callsInFlight: 1_000_000,
      },
    },
    agentDb: (db) => ({
      ...db,
      query: (sql, params, options) => {
        statements++;
        if (options?.name === 'gpux_write_node_heartbeats') writes++;
        return db.query(sql, params, options);
      },
    }),
    backend: (b) => ({
      run: (method, caller, request) => b.run(method, caller, request),
      reportNodes: (r) => {
        reports++;
        return b.reportNodes(r);
      },
    }),
  });
});

afterAll(async () => {
  await h?.close();
});

const gpu = (index: number) => ({
  index,
  name: 'NVIDIA H100 80GB HBM3',
  uuid: `GPU-${index}`,
  memoryTotalMib: 81_559,
  utilizationPercent: 0,
  temperatureC: 30,
});

function beat(p: Provider, hostnames: readonly string[], healthy = true): Promise<unknown> {
  const request: HeartbeatRequest = {
    clusterId: p.clusterId,
    nodes: hostnames.map((hostname) => ({
      hostname,
      healthy,
      problem: healthy ? '' : 'xid 79',
      gpus: Array.from({ length: 8 }, (_, i) => gpu(i)),
    })),
  };
  return h.call(h.client.heartbeat, p.token, request);
}

describe('heartbeats kept as state, written in batches (issue 18)', () => {
  it('parallel heartbeats of many clusters and many of one cluster all answer OK, cost no statement and few messages, and deadlock nothing', async () => {
    const clusters: { p: Provider; hosts: string[] }[] = [];
    for (let i = 0; i < 60; i++) {
      const p = await h.provider(2, 'h100', 'eu-west-1');
      clusters.push({ p, hosts: (await h.attach(p)).nodes.map((n) => n.hostname) });
    }
    const big = await h.provider(20, 'h100', 'eu-west-1');
    const bigHosts = (await h.attach(big)).nodes.map((n) => n.hostname);
    // Every token and cluster read once, as a running service has them.
    await Promise.all([beat(big, bigHosts), ...clusters.map(({ p, hosts }) => beat(p, hosts))]);
    errors.length = 0;
    statements = 0;
    reports = 0;

    // 500 heartbeats of one cluster at once and, beside them, two of every
    // other cluster, one healthy and one not: status changes go through the
    // books while the batches write.
    const calls = [
      ...Array.from({ length: 500 }, () => beat(big, bigHosts)),
      ...clusters.flatMap(({ p, hosts }) => [beat(p, hosts, false), beat(p, hosts)]),
    ];
    // The facts are written meanwhile, beside the books' status changes.
    const flushes = [h.server.front.flush()];
    const answers = await Promise.allSettled(calls);
    flushes.push(h.server.front.flush());
    await Promise.all(flushes);
    expect(answers.filter((a) => a.status === 'rejected')).toEqual([]);
    expect(errors).toEqual([]);
    // No statement of their own: only the writes asked for.
    expect(statements).toBe(writes);
    // The reports of the same turn go to the market together.
    expect(reports).toBeLessThan(calls.length / 2);
    await h.server.front.flush();
    // Every cluster's nodes hold the report of one heartbeat, and a status the book set.
    const rows = await h.ex.db.query<{ status: string; gpus: number; problem: string | null }>(
      `SELECT status, jsonb_array_length(gpus) AS gpus, problem FROM nodes
        WHERE cluster_id = ANY($1::text[])`,
      [clusters.map((c) => c.p.clusterId)],
    );
    expect(rows).toHaveLength(2 * clusters.length);
    for (const r of rows) {
      expect(r.gpus).toBe(8);
      expect([
        { status: 'online', problem: null },
        { status: 'offline', problem: 'xid 79' },
      ]).toContainEqual({ status: r.status, problem: r.problem });
    }
  });

  it('a GPU list is stored as the latest heartbeat reported it, repeated or changed', async () => {
    const p = await h.provider(1);
    const [host] = (await h.attach(p)).nodes.map((n) => n.hostname);
    const stored = async () =>
      (
        await h.ex.db.query<{ gpus: unknown }>('SELECT gpus FROM nodes WHERE cluster_id = $1', [
          p.clusterId,
        ])
      )[0]?.gpus;
    const send = (gpus: ReturnType<typeof gpu>[]) =>
      h.call(h.client.heartbeat, p.token, {
        clusterId: p.clusterId,
        nodes: [{ hostname: host ?? '', healthy: true, problem: '', gpus }],
      });
    const a = [gpu(0), gpu(1)];
    const b = [gpu(0)];
    for (const gpus of [a, a, b, b, a, []]) {
      await send(gpus);
      await h.server.front.flush();
      expect(await stored()).toEqual(gpus);
    }
  });

  it("a heartbeat that changes nothing is answered from the market's last answer, until the cluster's leases change", async () => {
    const p = await h.provider(2, 'b200', 'us-east-1');
    const hosts = (await h.attach(p)).nodes.map((n) => n.hostname);
    type Answer = { nodes: { hostname: string; leaseId: string }[] };
    await beat(p, hosts);
    reports = 0;
    await beat(p, hosts);
    await beat(p, hosts);
    expect(reports).toBe(0);
    // A fill leases a node: the next heartbeat shows it.
    await h.call(h.client.publishSell, p.token, {
      clusterId: p.clusterId,
      nodes: 1,
      priceCents: 250,
      windowHours: 48,
    });
    const buyer = await h.ex.party('kept-buyer');
    const bought = await h.ex.call('POST', '/v1/orders', buyer.token, {
      side: 'buy',
      gpu_type: 'b200',
      zone: 'us-east-1',
      gpu_count: 8,
      duration_hours: 1,
    });
    expect(bought.json['status'], bought.body).toBe('filled');
    const after = (await beat(p, hosts)) as Answer;
    expect(after.nodes.filter((n) => n.leaseId !== '').map((n) => n.leaseId)).toEqual([
      bought.json['lease_id'],
    ]);
    expect(reports).toBe(1);
  });

  it('a heartbeat answers with the status the book now holds; its problem is written with its facts', async () => {
    const p = await h.provider(2);
    const hosts = (await h.attach(p)).nodes.map((n) => n.hostname);
    const down = (await beat(p, hosts, false)) as { nodes: { status: NodeStatus }[] };
    expect(down.nodes.map((n) => n.status)).toEqual([
      NodeStatus.NODE_STATUS_OFFLINE,
      NodeStatus.NODE_STATUS_OFFLINE,
    ]);
    const up = (await beat(p, [hosts[0] ?? ''])) as { nodes: { status: NodeStatus }[] };
    expect(up.nodes.map((n) => n.status)).toEqual([
      NodeStatus.NODE_STATUS_ONLINE,
      NodeStatus.NODE_STATUS_OFFLINE,
    ]);
    const book = h.ex.market.writer('h100', 'us-west-1').view.clusters.get(p.clusterId);
    expect(book?.nodes.map((n) => n.status)).toEqual(['online', 'offline']);
    await h.server.front.flush();
    const [stored] = await h.ex.db.query<{ problem: string | null }>(
      'SELECT problem FROM nodes WHERE cluster_id = $1 AND hostname = $2',
      [p.clusterId, hosts[1]],
    );
    expect(stored?.problem).toBe('xid 79');
  });
});
