// The whole agent in this process, as `gpux start` runs it: events from the
// in-process bus, the exchange an in-memory fake (no network).

import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { InProcessBus, SUBJECTS, leaseNamespace, leaseUser, sshUserOf } from '@gpux/shared';
import type { LeaseProvisionEvent, LeaseRevokeEvent } from '@gpux/shared';
import { status as grpcStatus } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';

import { startAgent } from './agent.js';
import type { AgentHandle } from './agent.js';
import type { AgentStatus } from './agent-status.js';
import { compileAgentConfig } from './config.js';
import { ExchangeError } from './exchange/exchange-client.js';
import type { LogFn, Logger } from './logger.js';
import { FakeExchange } from './testing/fake-exchange.js';

const CLUSTER = 'cls_01jdq3m5x0aaaaaaaaaaaaaaaa';
const LEASE = 'lse_01jdq3m5x0aaaaaaaaaaaaaaaa';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function until(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`gave up waiting for ${what}`);
}

function provisionEvent(eventId: string): LeaseProvisionEvent {
  return {
    kind: 'lease.provision',
    event_id: eventId,
    lease_id: LEASE,
    cluster_id: CLUSTER,
    account_id: 'acc_1',
    namespace: leaseNamespace(LEASE),
    lease_user: leaseUser(LEASE),
    nodes: [{ hostname: 'node-a', ssh_user: sshUserOf(LEASE, 1) }],
    gpu_count: 8,
    start_ms: Date.now() - 1_000,
    end_ms: Date.now() + 3_600_000,
    source_lease_id: null,
    ssh_public_keys: ['ssh-ed25519 AAAA buyer'],
  };
}

interface LogLine {
  readonly level: string;
  readonly msg: string;
}

/** A logger keeping the lines' level and message. */
function recording(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at =
    (level: string): LogFn =>
    (a: object | string, msg?: string) =>
      void lines.push({ level, msg: typeof a === 'string' ? a : (msg ?? '') });
  return {
    lines,
    logger: { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') },
  };
}

async function start(
  askPrice?: string,
  prepare: (exchange: FakeExchange) => void = () => undefined,
  logger?: Logger,
  more: {
    stateDir?: string;
    bus?: InProcessBus;
    simulatedProvisionDelayMs?: number;
    drainTimeoutSeconds?: number;
  } = {},
) {
  const stateDir = more.stateDir ?? mkdtempSync(join(tmpdir(), 'gpux-agent-'));
  cleanups.push(() => rmSync(stateDir, { recursive: true, force: true }));
  const bus = more.bus ?? new InProcessBus();
  const exchange = new FakeExchange(CLUSTER, ['node-a', 'node-b']);
  prepare(exchange);
  const config = compileAgentConfig(
    {
      exchangeGrpcUrl: '127.0.0.1:1',
      token: 'gpux_0123456789abcdef',
      clusterId: CLUSTER,
      provisioner: 'simulated',
      sshListen: '127.0.0.1:0',
      heartbeatSeconds: 1,
      stateDir,
      askPrice,
      simulatedProvisionDelayMs: more.simulatedProvisionDelayMs,
      drainTimeoutSeconds: more.drainTimeoutSeconds,
    },
    { inProcessBus: true },
  );
  const agent: AgentHandle = await startAgent(config, {
    bus,
    exchange,
    ...(logger === undefined ? {} : { logger }),
    inventory: () =>
      Promise.resolve({
        kind: 'ok',
        gpus: [
          {
            index: 0,
            name: 'H100',
            uuid: 'GPU-0',
            memoryTotalMib: 81559,
            utilizationPercent: 0,
            temperatureC: 30,
          },
        ],
      }),
    hostFacts: () =>
      Promise.resolve({ hostname: 'h', os: 'Linux', cpuModel: 'x', cpuCores: 2, memoryMib: 1024 }),
  });
  cleanups.push(() => agent.stop());
  await agent.ready;
  return { agent, bus, exchange, stateDir };
}

describe('agent in process (gpux start, D34)', () => {
  it('attaches declaring its heartbeat, then heartbeats every node with the GPUs', async () => {
    const { exchange } = await start();
    expect(exchange.of('attach')[0]).toMatchObject({
      clusterId: CLUSTER,
      heartbeatIntervalSeconds: 1,
      provisioner: 'simulated',
      host: { hostname: 'h', cpuCores: 2 },
    });
    await until('a heartbeat', () => exchange.of('heartbeat').length > 0);
    expect(exchange.of('heartbeat')[0]).toMatchObject({
      clusterId: CLUSTER,
      nodes: [
        { hostname: 'node-a', healthy: true, gpus: [{ uuid: 'GPU-0', memoryTotalMib: 81559 }] },
        { hostname: 'node-b', healthy: true, gpus: [{ uuid: 'GPU-0' }] },
      ],
    });
  });

  it('a provision event delivered twice provisions once and reports once; a revoke removes it', async () => {
    const { bus, exchange, stateDir, agent } = await start();
    const first = provisionEvent('evt_a');
    bus.publish(SUBJECTS.leaseProvision(CLUSTER), first.event_id, JSON.stringify(first));
    // The same lease again under another message id, as a replay past the dedupe window.
    bus.publish(
      SUBJECTS.leaseProvision(CLUSTER),
      'evt_b',
      JSON.stringify({ ...first, event_id: 'evt_b' }),
    );
    await until(
      'both deliveries acked',
      () => bus.consumer(`agent_${CLUSTER}`, { filterSubject: '' }).unacked === 0,
    );
    expect(exchange.of('reportProvisioned')).toHaveLength(1);
    expect(existsSync(join(stateDir, 'workspaces', LEASE, sshUserOf(LEASE, 1)))).toBe(true);
    expect(agent.status().leases).toBe(1);

    const revoke: LeaseRevokeEvent = {
      kind: 'lease.revoke',
      event_id: 'evt_c',
      lease_id: LEASE,
      cluster_id: CLUSTER,
      namespace: leaseNamespace(LEASE),
      nodes: ['node-a'],
      reason: 'terminated',
      at_ms: Date.now(),
    };
    bus.publish(SUBJECTS.leaseRevoke(CLUSTER), revoke.event_id, JSON.stringify(revoke));
    await until('ReportRevoked', () => exchange.of('reportRevoked').length === 1);
    expect(existsSync(join(stateDir, 'workspaces', LEASE))).toBe(false);
  });

  it('lists one sell per free node at its ask; a refusal is kept in the status and retried', async () => {
    const { exchange, agent, stateDir } = await start('2.50');
    await until('two sells', () => exchange.sells.length === 2);
    expect(exchange.of('publishSell')).toEqual([
      { clusterId: CLUSTER, nodes: 1, priceCents: 250, windowHours: 168 },
      { clusterId: CLUSTER, nodes: 1, priceCents: 250, windowHours: 168 },
    ]);

    // D15: the collar moved; a node's lease ends and its node is free again.
    exchange.refusal = { code: 'price_out_of_collar', message: 'limit_price must be within ±50%' };
    exchange.nodes = [
      ...exchange.nodes,
      { nodeId: 'nod_3', hostname: 'node-c', status: 2, leaseId: '' },
    ];
    await until('the refusal in the status', () => agent.status().selling?.refusal !== undefined);
    expect(agent.status().selling?.refusal).toMatchObject({ code: 'price_out_of_collar' });
    const tries = exchange.of('publishSell').length;
    await until('a retry at the next heartbeat', () => exchange.of('publishSell').length > tries);
    // Operators see it too: status.json is rewritten after each round.
    const written = (): string => readFileSync(join(stateDir, 'status.json'), 'utf8');
    await until('the refusal in status.json', () => written().includes('price_out_of_collar'));
    expect(JSON.parse(written())).toMatchObject({
      selling: { askCents: 250, refusal: { code: 'price_out_of_collar' } },
    });

    exchange.refusal = undefined;
    await until('the third sell', () => exchange.sells.length === 3);
    await until('the refusal cleared', () => agent.status().selling?.refusal === undefined);
  });

  it('a sell refused as INVALID_ARGUMENT is not sent again: logged once, shown in status.json', async () => {
    const { logger, lines } = recording();
    const message = 'window_hours must be 1 to 168';
    const { exchange, agent, stateDir } = await start(
      '2.50',
      (e) =>
        e.failing.set(
          'publishSell',
          new ExchangeError('PublishSell', grpcStatus.INVALID_ARGUMENT, message),
        ),
      logger,
    );
    // Several seller rounds (one per heartbeat, 1 s apart) after the refusal.
    await until('three heartbeats', () => exchange.of('heartbeat').length >= 3);
    await until(
      'a seller round after the third heartbeat',
      () => exchange.of('listSells').length >= 3,
    );
    expect(exchange.of('publishSell')).toHaveLength(1);
    const logged = lines.filter((l) => l.level === 'error' && l.msg.includes('refused a sell'));
    expect(logged).toHaveLength(1);
    expect(agent.status().selling?.error).toContain(message);
    const written = JSON.parse(readFileSync(join(stateDir, 'status.json'), 'utf8')) as AgentStatus;
    expect(written.selling?.error).toContain(message);
    expect(written.exchange.refused).toEqual([
      expect.objectContaining({ method: 'PublishSell', code: 'INVALID_ARGUMENT', message }),
    ]);
  });

  it('a heartbeat refused as INVALID_ARGUMENT: the same heartbeat is not sent again, the refusal is in status.json', async () => {
    const { logger, lines } = recording();
    const message = 'nodes[0].gpus[0].name: at most 256 bytes';
    const { exchange, agent, stateDir } = await start(
      undefined,
      (e) =>
        e.failing.set(
          'heartbeat',
          new ExchangeError('Heartbeat', grpcStatus.INVALID_ARGUMENT, message),
        ),
      logger,
    );
    await until('a refused heartbeat', () => agent.status().lastHeartbeat?.ok === false);
    const first = agent.status().lastHeartbeat?.atMs ?? 0;
    // Two more scheduled rounds: the same state (a fixed inventory), so nothing is sent.
    await until(
      'two more heartbeat rounds',
      () => (agent.status().lastHeartbeat?.atMs ?? 0) > first + 1_500,
    );
    expect(exchange.of('heartbeat')).toHaveLength(1);
    expect(lines.filter((l) => l.msg === 'the exchange refused the heartbeat')).toHaveLength(1);
    expect(lines.filter((l) => l.msg === 'heartbeat failed')).toEqual([]);
    // status.json is written after each round: wait for the file of the third.
    const read = (): AgentStatus =>
      JSON.parse(readFileSync(join(stateDir, 'status.json'), 'utf8')) as AgentStatus;
    await until('status.json of the third round', () => {
      try {
        return (read().exchange.refused[0]?.times ?? 0) >= 3;
      } catch {
        return false; // being written
      }
    });
    const written = read();
    expect(written.lastHeartbeat).toMatchObject({ ok: false });
    expect(written.lastHeartbeat?.error).toContain(message);
    expect(written.exchange.refused[0]).toMatchObject({ method: 'Heartbeat', message });
  });

  it('is ready once running with every check ok; not while its heartbeats go unanswered, nor once stopping (issue 23)', async () => {
    const { exchange, agent } = await start();
    expect(agent.readiness()).toEqual({
      phase: 'running',
      checks: { exchange: 'ok', events: 'ok', provisioner: 'ok' },
    });
    exchange.down.add('heartbeat');
    await until('an unanswered heartbeat', () => agent.readiness().checks.exchange !== 'ok');
    expect(agent.readiness().checks.exchange).toMatch(
      /^the last heartbeat was not answered: heartbeat: UNAVAILABLE/,
    );
    exchange.down.delete('heartbeat');
    await until('an answered heartbeat', () => agent.readiness().checks.exchange === 'ok');
    const stopping = agent.stop();
    expect(agent.readiness().phase).toBe('draining');
    await stopping;
    expect(agent.readiness().phase).toBe('stopped');
  });

  it('stop() waits for lease work at most the drain deadline; the unfinished event is handed back and the next start provisions the lease (D30)', async () => {
    const { logger, lines } = recording();
    // A provisioning that would take ten minutes; a drain deadline of one second.
    const first = await start(undefined, () => undefined, logger, {
      simulatedProvisionDelayMs: 600_000,
      drainTimeoutSeconds: 1,
    });
    const event = provisionEvent('evt_slow');
    first.bus.publish(SUBJECTS.leaseProvision(CLUSTER), event.event_id, JSON.stringify(event));
    const record = join(first.stateDir, 'workspaces', LEASE, 'lease.json');
    await until('provisioning under way', () => existsSync(record));
    const stoppedAt = Date.now();
    await first.agent.stop();
    await first.agent.done;
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    expect(first.agent.status().phase).toBe('stopped');
    expect(lines.map((l) => l.msg)).toContain(
      'stopped with lease work unfinished; reconciliation takes it up at the next start',
    );
    // Not acked: delivered again (the bus would, at the next start's consumer).
    const consumer = first.bus.consumer(`agent_${CLUSTER}`, { filterSubject: '' });
    expect(consumer.unacked).toBe(1);
    expect(first.exchange.of('reportProvisioned')).toEqual([]);

    // The next start (same state directory, a fresh bus: the event is gone with
    // the process) finds the half-made workspace and the live lease, and provisions it.
    const lease = provisionEvent('evt_slow');
    const second = await start(
      undefined,
      (e) => {
        e.leases = [
          {
            leaseId: LEASE,
            namespace: lease.namespace,
            leaseUser: lease.lease_user,
            nodes: lease.nodes.map((n) => ({ hostname: n.hostname, sshUser: n.ssh_user })),
            gpuCount: lease.gpu_count,
            startTime: new Date(lease.start_ms),
            endTime: new Date(lease.end_ms),
            sshPublicKeys: [...lease.ssh_public_keys],
            status: 'provisioning',
            sourceLeaseId: '',
          },
        ];
      },
      undefined,
      { stateDir: first.stateDir },
    );
    await until('reported', () => second.exchange.of('reportProvisioned').length === 1);
    expect(JSON.parse(readFileSync(record, 'utf8'))).toMatchObject({ state: 'ready' });
  });

  it('stop() drains and resolves done; the status says stopped', async () => {
    const { agent } = await start();
    await agent.stop();
    await agent.done;
    expect(agent.status().phase).toBe('stopped');
  });
});
