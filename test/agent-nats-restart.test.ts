// The agent's one consume loop outlives a restart of its NATS server (its
// idle heartbeats notice the lost connection): a private nats-server with
// JetStream on a free port, stopped and started again on the same store while the agent
// runs; an event published after the restart is still provisioned. Its
// /readyz (issue 23) says `events` are not ready while the server is away,
// and is 200 again once it is back.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ExchangeDouble } from './agent-exchange-double.js';
import { startAgentProcess } from './support/agent-process.js';
import type { AgentProcess } from './support/agent-process.js';
import { PrivateNats } from './support/nats-server.js';
import { freePort } from './support/net.js';
import { untilWith } from './support/until.js';

const scratch = mkdtempSync(join(tmpdir(), 'gpux-agent-nats-'));
let nats: PrivateNats | undefined;
let agent: AgentProcess | undefined;
let double: ExchangeDouble | undefined;
const output = (): string => agent?.output() ?? '';

const until = untilWith({ output });

beforeAll(async () => {
  nats = await PrivateNats.start();
  double = new ExchangeDouble({ natsUrl: nats.url, ackWaitMs: 1_500 });
  await double.start();
});

afterAll(async () => {
  await agent?.stop('SIGKILL');
  await double?.close().catch(() => undefined);
  await nats?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('agent and a NATS server restart', () => {
  it('the same consume loop takes events published after the server came back', async () => {
    const d = double as ExchangeDouble;
    const clusterId = await d.addCluster(['nr-1', 'nr-2']);
    // Ready: its SSH gateway listens and it consumes its cluster's events.
    const probePort = await freePort();
    agent = await startAgentProcess({
      ...d.agentSettings(clusterId, join(scratch, 'state')),
      HOME: scratch,
      PROVISIONER: 'simulated',
      GPUX_METRICS_LISTEN: `127.0.0.1:${probePort}`,
    });
    const readyz = async (): Promise<{ status: number; text: string }> => {
      const res = await fetch(`http://127.0.0.1:${probePort}/readyz`);
      return { status: res.status, text: await res.text() };
    };
    await until('ready', async () => (await readyz()).status === 200);

    // Kept out of ListLeases: only the events can bring these leases to the agent
    // (whose reconciliation removes them afterwards; only the reports count here).
    const before = d.addLease(clusterId, ['nr-1'], [], false);
    await d.publish(before);
    await until(
      'the first lease reported',
      () => d.of('reportProvisioned', clusterId).length === 1,
    );

    const server = nats as PrivateNats;
    await server.stop();
    const away = await until('not ready without NATS', async () => {
      const r = await readyz();
      return r.status === 503 ? r : undefined;
    });
    expect(away.text).toContain('"events":"NATS disconnected; reconnecting"');
    await server.resume();
    await until('ready again with NATS back', async () => (await readyz()).status === 200);
    const after = d.addLease(clusterId, ['nr-2'], [], false);
    // The double's own client may not have reconnected yet: publish until stored (same id).
    await until('the event stored after the restart', () =>
      d.publish(after).then(
        () => true,
        () => false,
      ),
    );
    await until(
      'the second lease reported',
      () => d.of('reportProvisioned', clusterId).length === 2,
    );
    expect(d.of('reportProvisioned', clusterId).map((r) => r['leaseId'])).toEqual([
      before.lease_id,
      after.lease_id,
    ]);
    expect(agent.child.exitCode).toBeNull();
    // It did lose its server in between (its log arrives through a pipe, so wait for it).
    await until('the reconnect in the log', () => output().includes('"msg":"NATS reconnect"'));

    expect(await agent.stop('SIGTERM'), output()).toBe(0);
  }, 90_000);
});
