// The built agent as its own process (agent/dist/main.js) against a gRPC
// double of the exchange on loopback (agent-exchange-double.ts) and this
// machine's NATS JetStream, with a stream and subjects of this file's own.

import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ExchangeDouble } from './agent-exchange-double.js';
import { spawnAgentProcess } from './support/agent-process.js';
import type { AgentProcess } from './support/agent-process.js';
import { untilWith } from './support/until.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The agent reports its package's version (one for the whole repository, docs/releases.md). */
const AGENT_VERSION = (
  JSON.parse(readFileSync(join(ROOT, 'agent/package.json'), 'utf8')) as { version: string }
).version;
const NATS_URL = process.env['GPUX_TEST_NATS_URL'] ?? 'nats://127.0.0.1:4222';
const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOnly+a+test+key buyer@example';

const scratch = mkdtempSync(join(tmpdir(), 'gpux-agent-e2e-'));
const fakeBin = join(scratch, 'bin');

/** Two H100s, answered only to the exact query the agent must make. */
const FAKE_NVIDIA_SMI = `#!/bin/sh
[ "$1" = "--query-gpu=index,name,uuid,memory.total,utilization.gpu,temperature.gpu" ] || exit 9
[ "$2" = "--format=csv,noheader,nounits" ] || exit 9
echo "0, NVIDIA H100 80GB HBM3, GPU-11111111-2222-3333-4444-555555555555, 81559, 0, 31"
echo "1, NVIDIA H100 80GB HBM3, GPU-66666666-2222-3333-4444-555555555555, 81559, 97, 64"
`;

let double: ExchangeDouble;

beforeAll(async () => {
  mkdirSync(fakeBin, { recursive: true });
  writeFileSync(join(fakeBin, 'nvidia-smi'), FAKE_NVIDIA_SMI);
  chmodSync(join(fakeBin, 'nvidia-smi'), 0o755);
  double = new ExchangeDouble({ natsUrl: NATS_URL, ackWaitMs: 1_500 });
  await double.start();
});

afterAll(async () => {
  for (const a of running) await a.stop('SIGKILL');
  await double?.close();
  rmSync(scratch, { recursive: true, force: true });
});

const until = untilWith({ timeoutMs: 30_000 });

const running = new Set<AgentProcess>();

/** The agent with `env` and nothing else of this test process's (no GPUX_*, no NATS_*). */
function startAgent(env: Record<string, string>): AgentProcess {
  const agent = spawnAgentProcess({
    PATH: `${fakeBin}:${process.env['PATH'] ?? ''}`,
    HOME: scratch,
    ...env,
  });
  running.add(agent);
  void agent.exited().then(() => running.delete(agent));
  return agent;
}

/** SIGTERM: the agent drains and exits 0 (D34). */
async function drain(agent: AgentProcess): Promise<void> {
  expect(await agent.stop('SIGTERM'), agent.output()).toBe(0);
}

function settings(clusterId: string, stateDir: string, extra: Record<string, string> = {}) {
  return {
    ...double.agentSettings(clusterId, stateDir),
    PROVISIONER: 'simulated',
    LOG_LEVEL: 'debug',
    ...extra,
  };
}

function stateDir(): string {
  return mkdtempSync(join(scratch, 'state-'));
}

describe('agent process', () => {
  it('a bad or missing setting exits non-zero with one line per problem, all at once', async () => {
    const agent = startAgent({
      GPUX_TOKEN: 'short',
      GPUX_LIST_HOURS: '0',
      PROVISIONER: 'docker',
      GPUX_SSH_LISTEN: '0.0.0.0:22',
    });
    expect(await agent.exited()).toBe(2);
    expect(agent.output().trimEnd().split('\n')).toEqual([
      'gpux agent: EXCHANGE_GRPC_URL is required (host:port of the exchange)',
      'gpux agent: GPUX_TOKEN must be 16 to 512 printable characters, no spaces',
      'gpux agent: GPUX_CLUSTER_ID is required (cls_…)',
      "gpux agent: NATS_URL is required: the exchange's in-process bus is reachable only from `gpux start`",
      'gpux agent: PROVISIONER must be simulated or kubernetes, got "docker"',
      'gpux agent: GPUX_LIST_HOURS must be a whole number from 2 to 720, got "0"',
    ]);
  });

  it('PROVISIONER=kubernetes without its settings stops the agent with one line each', async () => {
    const clusterId = await double.addCluster(['k-1']);
    const agent = startAgent(settings(clusterId, stateDir(), { PROVISIONER: 'kubernetes' }));
    expect(await agent.exited()).toBe(2);
    expect(agent.output()).toContain(
      'gpux agent: GPUX_KUBE_PUBLIC_SERVER is required with PROVISIONER=kubernetes',
    );
    expect(agent.output()).toContain(
      'gpux agent: GPUX_WEBHOOK_CERT_FILE and GPUX_WEBHOOK_KEY_FILE are required with PROVISIONER=kubernetes',
    );
  });

  it('attaches, then heartbeats every node with the GPUs nvidia-smi lists (D29)', async () => {
    const clusterId = await double.addCluster(['hb-1', 'hb-2']);
    const agent = startAgent(settings(clusterId, stateDir()));
    await until('two heartbeats', () => double.of('heartbeat', clusterId).length >= 2, {
      output: agent.output,
    });
    const [attach] = double.of('attach', clusterId);
    expect(attach).toMatchObject({
      clusterId,
      heartbeatIntervalSeconds: 1,
      provisioner: 'simulated',
      agentVersion: AGENT_VERSION,
    });
    // Host facts from systeminformation.
    const host = attach?.['host'] as { cpuCores: number; memoryMib: number; os: string };
    expect(host.cpuCores).toBeGreaterThan(0);
    expect(host.memoryMib).toBeGreaterThan(0);
    expect(host.os).not.toBe('');
    const gpus = [
      {
        index: 0,
        name: 'NVIDIA H100 80GB HBM3',
        uuid: 'GPU-11111111-2222-3333-4444-555555555555',
        memoryTotalMib: 81559,
        utilizationPercent: 0,
        temperatureC: 31,
      },
      {
        index: 1,
        name: 'NVIDIA H100 80GB HBM3',
        uuid: 'GPU-66666666-2222-3333-4444-555555555555',
        memoryTotalMib: 81559,
        utilizationPercent: 97,
        temperatureC: 64,
      },
    ];
    expect(double.of('heartbeat', clusterId)[1]).toEqual({
      clusterId,
      nodes: [
        { hostname: 'hb-1', healthy: true, problem: '', gpus },
        { hostname: 'hb-2', healthy: true, problem: '', gpus },
      ],
    });
    await drain(agent);
  });

  it('a provision event delivered twice: one workspace, ReportProvisioned once; its revoke removes it', async () => {
    const clusterId = await double.addCluster(['pv-1', 'pv-2']);
    const dir = stateDir();
    const agent = startAgent(settings(clusterId, dir));
    await until('attach', () => double.of('attach', clusterId).length > 0, {
      output: agent.output,
    });
    const event = double.addLease(clusterId, ['pv-1', 'pv-2'], [KEY]);
    await double.publish(event);
    // The same event again under another message id: a replay past the dedupe window.
    await double.publish(event, `${event.event_id}-again`);
    await until('both deliveries acked', () => double.eventsDone(clusterId), {
      output: agent.output,
    });

    const reports = double.of('reportProvisioned', clusterId);
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({
      leaseId: event.lease_id,
      sshEndpoints: [
        {
          hostname: 'pv-1',
          endpoint: expect.stringMatching(
            new RegExp(`^${event.nodes[0]?.ssh_user}@127\\.0\\.0\\.1:[1-9]\\d*$`),
          ) as string,
        },
        {
          hostname: 'pv-2',
          endpoint: expect.stringMatching(
            new RegExp(`^${event.nodes[1]?.ssh_user}@127\\.0\\.0\\.1:[1-9]\\d*$`),
          ) as string,
        },
      ],
      sshHostKeys: [expect.stringMatching(/^ssh-ed25519 AAAA/) as string],
    });
    expect(reports[0]?.['kubeconfig']).toContain(`namespace: ${event.namespace}`);
    const workspace = join(dir, 'workspaces', event.lease_id);
    expect(existsSync(join(workspace, event.nodes[0]?.ssh_user ?? '-'))).toBe(true);
    expect(existsSync(join(workspace, event.nodes[1]?.ssh_user ?? '-'))).toBe(true);

    await double.publish(double.endLease(clusterId, event.lease_id));
    await until('ReportRevoked', () => double.of('reportRevoked', clusterId).length === 1, {
      output: agent.output,
    });
    expect(existsSync(workspace)).toBe(false);
    await drain(agent);
  });

  it('a revoke that arrives before its provision wins (redelivery keeps no order)', async () => {
    const clusterId = await double.addCluster(['rv-1']);
    const dir = stateDir();
    const agent = startAgent(settings(clusterId, dir));
    await until('attach', () => double.of('attach', clusterId).length > 0, {
      output: agent.output,
    });
    const provision = double.addLease(clusterId, ['rv-1'], [KEY]);
    const revoke = double.endLease(clusterId, provision.lease_id);
    await double.publish(revoke);
    await until('the revoke handled', () => double.eventsDone(clusterId), { output: agent.output });
    await double.publish(provision);
    await until('the provision handled', () => double.eventsDone(clusterId), {
      output: agent.output,
    });

    expect(double.of('reportProvisioned', clusterId)).toEqual([]);
    expect(double.of('reportRevoked', clusterId)).toEqual([
      { clusterId, leaseId: provision.lease_id },
    ]);
    expect(existsSync(join(dir, 'workspaces', provision.lease_id))).toBe(false);
    // Remembered on disk until the lease's end.
    expect(existsSync(join(dir, 'revoked', `${provision.lease_id}.json`))).toBe(true);
    await drain(agent);
  });

  it('SIGKILLed mid-provisioning and restarted, the agent provisions the lease exactly once', async () => {
    const clusterId = await double.addCluster(['kl-1']);
    const dir = stateDir();
    const slow = startAgent(
      settings(clusterId, dir, { GPUX_SIMULATED_PROVISION_DELAY_MS: '600000' }),
    );
    await until('attach', () => double.of('attach', clusterId).length > 0, { output: slow.output });
    const event = double.addLease(clusterId, ['kl-1'], [KEY]);
    await double.publish(event);
    const record = join(dir, 'workspaces', event.lease_id, 'lease.json');
    await until('provisioning under way', () => existsSync(record), { output: slow.output });
    await slow.stop('SIGKILL');
    expect(double.of('reportProvisioned', clusterId)).toEqual([]);

    // Restarted: the reconciliation at start and the redelivered event both reach the lease.
    const agent = startAgent(settings(clusterId, dir));
    await until('ReportProvisioned', () => double.of('reportProvisioned', clusterId).length > 0, {
      output: agent.output,
    });
    await until('the redelivered event acked', () => double.eventsDone(clusterId), {
      output: agent.output,
    });
    // One more reconciliation after both: still nothing to do.
    const lists = double.of('listLeases', clusterId).length;
    await until(
      'a later reconciliation',
      () => double.of('listLeases', clusterId).length > lists + 1,
    );
    expect(double.of('reportProvisioned', clusterId)).toHaveLength(1);
    expect(existsSync(join(dir, 'workspaces', event.lease_id, 'kubeconfig.yaml'))).toBe(true);
    await drain(agent);
  });

  it('reconciliation revokes an orphan workspace and never a live one; unreachable, it revokes nothing (D30)', async () => {
    const clusterId = await double.addCluster(['rc-1', 'rc-2']);
    const dir = stateDir();
    const first = startAgent(settings(clusterId, dir));
    await until('attach', () => double.of('attach', clusterId).length > 0, {
      output: first.output,
    });
    const ended = double.addLease(clusterId, ['rc-1'], [KEY]);
    const live = double.addLease(clusterId, ['rc-2'], [KEY]);
    await double.publish(ended);
    await double.publish(live);
    await until('both reported', () => double.of('reportProvisioned', clusterId).length === 2, {
      output: first.output,
    });
    await drain(first);

    // While the agent is away, one lease ends and its revoke is lost.
    double.endLease(clusterId, ended.lease_id);
    double.unavailable.add('listLeases');
    const before = double.of('listLeases', clusterId).length;
    const agent = startAgent(settings(clusterId, dir));
    await until(
      'two failed lease lists',
      () => double.of('listLeases', clusterId).length >= before + 2,
      { output: agent.output },
    );
    expect(existsSync(join(dir, 'workspaces', ended.lease_id)), agent.output()).toBe(true);
    expect(existsSync(join(dir, 'workspaces', live.lease_id)), agent.output()).toBe(true);
    expect(double.of('reportRevoked', clusterId), agent.output()).toEqual([]);

    double.unavailable.delete('listLeases');
    await until('the orphan revoked', () => double.of('reportRevoked', clusterId).length > 0, {
      output: agent.output,
    });
    expect(double.of('reportRevoked', clusterId), agent.output()).toEqual([
      { clusterId, leaseId: ended.lease_id },
    ]);
    expect(existsSync(join(dir, 'workspaces', ended.lease_id))).toBe(false);
    expect(existsSync(join(dir, 'workspaces', live.lease_id, 'kubeconfig.yaml'))).toBe(true);
    // The live lease is neither revoked nor reported again.
    expect(double.of('reportProvisioned', clusterId), agent.output()).toHaveLength(2);
    await drain(agent);
  });

  it('lists one sell per free node at its ask', async () => {
    const clusterId = await double.addCluster(['s-1', 's-2', 's-3']);
    const agent = startAgent(
      settings(clusterId, stateDir(), { GPUX_ASK_PRICE: '2.50', GPUX_LIST_HOURS: '24' }),
    );
    await until('three sells', () => double.clusters.get(clusterId)?.sells.length === 3, {
      output: agent.output,
    });
    expect(double.of('publishSell', clusterId)).toEqual(
      Array(3).fill({ clusterId, nodes: 1, priceCents: 250, windowHours: 24 }),
    );
    await drain(agent);
  });
});
