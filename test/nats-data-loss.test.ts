// NATS loses its JetStream data (docs/operations.md "Recovering from NATS
// data loss"): the built exchange on a fresh PostgreSQL database and the
// built agent (simulated provisioner) on a private nats-server that is
// stopped and started again on an EMPTY store, and whose stream is deleted
// under a running market. Neither program is restarted:
//
// - the exchange makes its stream and the agent's consumer again, and
//   publishes into it what its outbox still held (a lease terminated while
//   NATS was down);
// - an event the lost store held and the agent never took (a lease
//   terminated while the agent was paused) is found by the agent's
//   reconciliation (D30): that lease's access ends too;
// - a lease bought afterwards is provisioned, and its termination revoked,
//   within seconds, by the events (reconciliation runs only every 20 s here:
//   heartbeats of 10 s);
// - a stream deleted without a server restart: the agent finds its consumer
//   gone, says so once, and Attach makes it (and the stream) again.

import { existsSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PrivateNats } from './support/nats-server.js';
import { ProviderStack } from './support/provider-stack.js';

/** The agent's heartbeat; it reconciles every two (agent/src/config.ts). */
const HEARTBEAT_SECONDS = 10;
const RECONCILE_MS = 2 * HEARTBEAT_SECONDS * 1000;
const CONSUMER_GONE =
  'event consumer gone (NATS lost its data?): asking the exchange to make it again; reconciliation covers the events lost with it';

/** What "within seconds" means for an event-driven step here. */
const EVENT_MS = 6_000;

let nats: PrivateNats;
let stack: ProviderStack;

beforeAll(async () => {
  nats = await PrivateNats.start();
  stack = await ProviderStack.start({
    nodes: ['dl-1', 'dl-2', 'dl-3', 'dl-4', 'dl-5'],
    natsUrl: nats.url,
    label: 'gpux_e2e_natsloss',
    agentEnv: { GPUX_HEARTBEAT_SECONDS: String(HEARTBEAT_SECONDS) },
  });
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await nats?.stop();
  if (nats !== undefined) rmSync(dirname(nats.storeDir), { recursive: true, force: true });
});

async function query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: stack.database.url });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows as T[];
  } finally {
    await c.end();
  }
}

async function unpublished(): Promise<number> {
  const [row] = await query<{ n: string }>(
    'SELECT count(*) AS n FROM outbox WHERE published_ms IS NULL',
  );
  return Number(row?.n ?? 0);
}

/** The simulated provisioner's workspace of a lease: its access (gone once revoked). */
function hasWorkspace(leaseId: string): boolean {
  return existsSync(join(stack.agentStateDir, 'workspaces', leaseId));
}

function workspaces(): string[] {
  const dir = join(stack.agentStateDir, 'workspaces');
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

function logged(msg: string, leaseId?: string): Record<string, unknown>[] {
  const lines = stack.agent?.logged(msg) ?? [];
  return leaseId === undefined ? lines : lines.filter((l) => l['leaseId'] === leaseId);
}

async function buyActive(): Promise<{ leaseId: string; activeAfterMs: number }> {
  const started = Date.now();
  const order = await stack.buyNode();
  expect(order['status']).toBe('filled');
  const leaseId = order['lease_id'] as string;
  await stack.waitForLease(leaseId, stack.buyer.token, 'active', 60_000);
  return { leaseId, activeAfterMs: Date.now() - started };
}

/** DELETE the lease; resolves with how long until its workspace was gone. */
async function terminateAndTime(leaseId: string, timeoutMs: number): Promise<number> {
  const started = Date.now();
  await stack.terminate(leaseId);
  await stack.waitFor(`the access of ${leaseId} gone`, () => !hasWorkspace(leaseId), timeoutMs);
  return Date.now() - started;
}

async function streamExists(): Promise<boolean> {
  const nc = await connect({ servers: nats.url, reconnect: false });
  try {
    await (await jetstreamManager(nc)).streams.info(stack.natsStream);
    return true;
  } catch {
    return false;
  } finally {
    await nc.close();
  }
}

describe('recovery after NATS loses its JetStream data', () => {
  it('a server started again on an empty store: nothing restarted, every ended lease loses its access, new leases work within seconds', async () => {
    await stack.waitForAsks(8 * 5);
    const kept = await buyActive();
    const lostEvent = await buyActive();
    const outboxEvent = await buyActive();
    const agent = stack.agent;
    if (agent === undefined) throw new Error('no agent');
    const agentPid = agent.child.pid;
    const exchangePid = stack.exchange?.child.pid;

    // The agent paused: a termination whose event the stream stores and the
    // agent never takes (it goes with the store).
    agent.child.kill('SIGSTOP');
    // Its pull request expires on the server first (5 s, agent/src/events/nats-event-stream.ts):
    // else the server sends the event into its socket, where the wipe does not reach it.
    await new Promise((r) => setTimeout(r, 6_000));
    await stack.terminate(lostEvent.leaseId);
    await stack.waitFor('its revoke event published', async () => (await unpublished()) === 0);
    // NATS down: a termination whose event waits in the outbox.
    await nats.stop();
    await stack.terminate(outboxEvent.leaseId);
    expect(await unpublished()).toBeGreaterThan(0);
    nats.wipeStore();
    await nats.resume();
    const backAt = Date.now();
    agent.child.kill('SIGCONT');

    // The outbox's event reaches the new stream and the agent.
    await stack.waitFor('the outbox published again', async () => (await unpublished()) === 0);
    await stack.waitFor(
      'the outbox lease revoked',
      () => !hasWorkspace(outboxEvent.leaseId),
      RECONCILE_MS + 15_000,
    );
    const outboxRevokedMs = Date.now() - backAt;
    // The lost event's lease: reconciliation (D30), within one interval and its work.
    await stack.waitFor(
      'the lost event lease revoked',
      () => !hasWorkspace(lostEvent.leaseId),
      RECONCILE_MS + 15_000,
    );
    const lostRevokedMs = Date.now() - backAt;
    expect(
      logged('reconciliation: workspace without a live lease', lostEvent.leaseId),
    ).toHaveLength(1);
    // Both were reported revoked to the exchange, which keeps no kubeconfig of them (D28).
    for (const id of [lostEvent.leaseId, outboxEvent.leaseId]) {
      await stack.waitFor(`the revocation of ${id} reported`, async () => {
        const [a] = await query<{ revoked_ms: string | null }>(
          'SELECT revoked_ms FROM lease_access WHERE lease_id = $1',
          [id],
        );
        return a?.revoked_ms !== null && a?.revoked_ms !== undefined;
      });
    }
    // The lease nobody ended kept its access.
    expect(hasWorkspace(kept.leaseId)).toBe(true);
    expect((await stack.ok('GET', `/v1/leases/${kept.leaseId}`, stack.buyer.token))['status']).toBe(
      'active',
    );

    // A new lease: provisioned and revoked by the events, within seconds.
    const fresh = await buyActive();
    const freshRevokedMs = await terminateAndTime(fresh.leaseId, EVENT_MS);
    // By its event (logged once acked, after the revocation; the log comes through a pipe).
    await stack.waitFor(
      'the revoke event handled',
      () => logged('lease.revoke handled', fresh.leaseId).length === 1,
      5_000,
    );
    console.log(
      JSON.stringify({
        afterWipe: {
          outboxEventRevokedMs: outboxRevokedMs,
          lostEventRevokedMs: lostRevokedMs,
          newLeaseActiveMs: fresh.activeAfterMs,
          newLeaseRevokedMs: freshRevokedMs,
        },
      }),
    );
    expect(fresh.activeAfterMs).toBeLessThan(EVENT_MS);
    expect(freshRevokedMs).toBeLessThan(EVENT_MS);
    expect(workspaces()).toEqual([kept.leaseId]);

    // Neither program was restarted.
    expect(stack.agent?.child.pid).toBe(agentPid);
    expect(stack.agent?.child.exitCode).toBeNull();
    expect(stack.exchange?.child.pid).toBe(exchangePid);
    expect(stack.exchange?.child.exitCode).toBeNull();
    await stack.terminate(kept.leaseId);
    await stack.waitFor('the kept lease revoked', () => !hasWorkspace(kept.leaseId), EVENT_MS);
  }, 180_000);

  it('a stream deleted under a running market: the agent finds its consumer gone, says so once, and Attach makes it again', async () => {
    await stack.waitForAsks(8);
    const saidBefore = logged(CONSUMER_GONE).length;
    const nc = await connect({ servers: nats.url });
    try {
      await (await jetstreamManager(nc)).streams.delete(stack.natsStream);
    } finally {
      await nc.close();
    }
    const goneAt = Date.now();
    // No event is published meanwhile: the agent's Attach alone makes them again.
    const againBefore = logged('event consumer there again; consuming').length;
    await stack.waitFor(
      'the agent says its consumer is gone',
      () => logged(CONSUMER_GONE).length > saidBefore,
    );
    await stack.waitFor(
      'the agent consumes again',
      () => logged('event consumer there again; consuming').length > againBefore,
    );
    const againMs = Date.now() - goneAt;
    expect(await streamExists()).toBe(true);
    expect(
      logged('attached again: the exchange made the event consumer again').length,
    ).toBeGreaterThan(0);
    console.log(JSON.stringify({ streamDeleted: { consumingAgainMs: againMs } }));

    const fresh = await buyActive();
    const revokedMs = await terminateAndTime(fresh.leaseId, EVENT_MS);
    // By its event (logged once acked, after the revocation; the log comes through a pipe).
    await stack.waitFor(
      'the revoke event handled',
      () => logged('lease.revoke handled', fresh.leaseId).length === 1,
      5_000,
    );
    expect(fresh.activeAfterMs).toBeLessThan(EVENT_MS);
    expect(revokedMs).toBeLessThan(EVENT_MS);
    // Said once for the one loss.
    expect(logged(CONSUMER_GONE)).toHaveLength(saidBefore + 1);
  }, 120_000);
});
