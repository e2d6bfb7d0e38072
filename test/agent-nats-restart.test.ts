// The agent's one consume loop outlives a restart of its NATS server (its
// idle heartbeats notice the lost connection): a private nats-server with
// JetStream on a free port, stopped and started again on the same store while the agent
// runs; an event published after the restart is still provisioned.

import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ExchangeDouble } from './agent-exchange-double.js';
import { untilWith } from './support/until.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MAIN = join(ROOT, 'agent/dist/main.js');
const NATS_SERVER = process.env['GPUX_TEST_NATS_SERVER'] ?? 'nats-server';

const scratch = mkdtempSync(join(tmpdir(), 'gpux-agent-nats-'));
let port = 0;
let server: ChildProcess | undefined;
let agent: ChildProcess | undefined;
let double: ExchangeDouble | undefined;
let output = '';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port: p } = s.address() as { port: number };
      s.close(() => resolve(p));
    });
  });
}

function accepting(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

const until = untilWith({ output: () => output });

async function startServer(): Promise<void> {
  server = spawn(
    NATS_SERVER,
    ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', join(scratch, 'nats')],
    { stdio: 'ignore' },
  );
  await until('nats-server accepting', accepting);
}

async function stopServer(): Promise<void> {
  const s = server;
  if (s === undefined || s.exitCode !== null) return;
  s.kill('SIGTERM');
  await once(s, 'exit');
}

beforeAll(async () => {
  port = await freePort();
  await startServer();
  double = new ExchangeDouble({ natsUrl: `nats://127.0.0.1:${port}`, ackWaitMs: 1_500 });
  await double.start();
});

afterAll(async () => {
  agent?.kill('SIGKILL');
  await double?.close().catch(() => undefined);
  await stopServer();
  rmSync(scratch, { recursive: true, force: true });
});

describe('agent and a NATS server restart', () => {
  it('the same consume loop takes events published after the server came back', async () => {
    const d = double as ExchangeDouble;
    const clusterId = await d.addCluster(['nr-1', 'nr-2']);
    agent = spawn(process.execPath, [MAIN], {
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: scratch,
        EXCHANGE_GRPC_URL: d.url,
        GPUX_TOKEN: d.token,
        GPUX_CLUSTER_ID: clusterId,
        NATS_URL: `nats://127.0.0.1:${port}`,
        PROVISIONER: 'simulated',
        GPUX_SSH_LISTEN: '127.0.0.1:0',
        GPUX_HEARTBEAT_SECONDS: '1',
        GPUX_STATE_DIR: join(scratch, 'state'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    agent.stdout?.on('data', (b: Buffer) => (output += b.toString()));
    agent.stderr?.on('data', (b: Buffer) => (output += b.toString()));
    await until('consuming', () => output.includes('"msg":"consuming lease events"'));

    // Kept out of ListLeases: only the events can bring these leases to the agent
    // (whose reconciliation removes them afterwards; only the reports count here).
    const before = d.addLease(clusterId, ['nr-1'], [], false);
    await d.publish(before);
    await until(
      'the first lease reported',
      () => d.of('reportProvisioned', clusterId).length === 1,
    );

    await stopServer();
    await startServer();
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
    expect(agent.exitCode).toBeNull();
    // It did lose its server in between (its log arrives through a pipe, so wait for it).
    await until('the reconnect in the log', () => output.includes('"msg":"NATS reconnect"'));

    agent.kill('SIGTERM');
    const [code] = (await once(agent, 'exit')) as [number | null];
    expect(code).toBe(0);
  }, 90_000);
});
