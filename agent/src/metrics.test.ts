// The agent's /metrics (issue 23, docs/metrics.md): its calls to the
// exchange by method and code, heartbeats' results, reconciliation actions,
// lease durations and SSH sessions, served on GPUX_METRICS_LISTEN.

import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';

import { compileAgentConfig } from './config.js';
import { ExchangeError } from './exchange/exchange-client.js';
import { AgentMetrics, serveMetrics } from './metrics.js';
import type { MetricsServer } from './metrics.js';
import type { Readiness } from './probes.js';
import { FakeExchange } from './testing/fake-exchange.js';

const CLUSTER = 'cls_01jdq3m5x0aaaaaaaaaaaaaaaa';

let server: MetricsServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function text(m: AgentMetrics): Promise<string> {
  return m.registry.metrics();
}

function value(t: string, series: string): number | undefined {
  const line = t.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('the agent metrics', () => {
  it('count calls to the exchange by method and code, and heartbeats by result', async () => {
    const m = new AgentMetrics();
    const fake = new FakeExchange(CLUSTER, ['node-a']);
    const exchange = m.instrument(fake);
    await exchange.heartbeat({ clusterId: CLUSTER, nodes: [] });
    await exchange.listLeases(CLUSTER);
    fake.failing.set(
      'heartbeat',
      new ExchangeError('Heartbeat', status.PERMISSION_DENIED, 'not your cluster'),
    );
    await expect(exchange.heartbeat({ clusterId: CLUSTER, nodes: [] })).rejects.toThrow();
    const t = await text(m);
    expect(value(t, 'gpux_agent_grpc_calls_total{method="Heartbeat",code="OK"}')).toBe(1);
    expect(
      value(t, 'gpux_agent_grpc_calls_total{method="Heartbeat",code="PERMISSION_DENIED"}'),
    ).toBe(1);
    expect(value(t, 'gpux_agent_grpc_calls_total{method="ListLeases",code="OK"}')).toBe(1);
    expect(value(t, 'gpux_agent_heartbeats_total{result="ok"}')).toBe(1);
    expect(value(t, 'gpux_agent_heartbeats_total{result="failed"}')).toBe(1);
    expect(value(t, 'gpux_agent_grpc_call_duration_seconds_count{method="Heartbeat"}')).toBe(2);
    expect(value(t, 'gpux_agent_last_heartbeat_success_timestamp_seconds')).toBeGreaterThan(0);
  });

  it('count reconciliation actions and rounds, and time provisioning and revocation', async () => {
    const m = new AgentMetrics();
    m.reconciled({ atMs: 0, ok: true, revoked: 2, provisioned: 1, reported: 0, failures: 1 });
    m.reconciled({ atMs: 0, ok: false, revoked: 0, provisioned: 0, reported: 0, failures: 0 });
    m.leaseObserver.provisioned(2);
    m.leaseObserver.revoked(0.2);
    const t = await text(m);
    expect(value(t, 'gpux_agent_reconciliation_actions_total{action="revoke"}')).toBe(2);
    expect(value(t, 'gpux_agent_reconciliation_actions_total{action="provision"}')).toBe(1);
    expect(value(t, 'gpux_agent_reconciliation_actions_total{action="report"}')).toBe(0);
    expect(value(t, 'gpux_agent_reconciliation_actions_total{action="failure"}')).toBe(1);
    expect(value(t, 'gpux_agent_reconciliations_total{result="failed"}')).toBe(1);
    expect(value(t, 'gpux_agent_lease_provisioning_duration_seconds_sum')).toBe(2);
    expect(value(t, 'gpux_agent_lease_revocation_duration_seconds_count')).toBe(1);
  });

  it('serve GET /metrics on their own address, reading the gauges first; anything else is 404', async () => {
    const m = new AgentMetrics();
    let sessions = 0;
    server = await serveMetrics(
      m,
      { host: '127.0.0.1', port: 0 },
      { before: () => m.sshSessions.set(++sessions) },
    );
    const url = `http://127.0.0.1:${server.address.port}`;
    const res = await fetch(`${url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(value(await res.text(), 'gpux_agent_ssh_sessions_open')).toBe(1);
    expect((await fetch(`${url}/`)).status).toBe(404);
    expect((await fetch(`${url}/metrics`, { method: 'POST' })).status).toBe(404);
  });

  it('serve the probes beside them: /healthz alive, /readyz 200 only when running with every check ok', async () => {
    let readiness: Readiness = {
      phase: 'attaching',
      checks: { exchange: 'not attached yet', events: 'not consuming yet', provisioner: 'ok' },
    };
    server = await serveMetrics(
      new AgentMetrics(),
      { host: '127.0.0.1', port: 0 },
      { readiness: () => readiness },
    );
    const url = `http://127.0.0.1:${server.address.port}`;
    const get = async (path: string): Promise<{ status: number; json: unknown }> => {
      const res = await fetch(`${url}${path}`);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      return { status: res.status, json: await res.json() };
    };
    expect(await get('/healthz')).toEqual({ status: 200, json: { status: 'ok' } });
    expect(await get('/readyz')).toEqual({
      status: 503,
      json: {
        data: null,
        error: {
          code: 'unavailable',
          message:
            'not ready: starting: not attached and consuming yet; exchange: not attached yet; events: not consuming yet',
          phase: 'attaching',
          checks: readiness.checks,
        },
      },
    });
    readiness = { phase: 'running', checks: { exchange: 'ok', events: 'ok', provisioner: 'ok' } };
    expect(await get('/readyz')).toEqual({
      status: 200,
      json: { status: 'ready', phase: 'running', checks: readiness.checks },
    });
    // One check failing is enough.
    readiness = {
      phase: 'running',
      checks: { exchange: 'ok', events: 'NATS disconnected', provisioner: 'ok' },
    };
    expect((await get('/readyz')).status).toBe(503);
    // Draining: 503 though every check is ok; alive still.
    readiness = { phase: 'draining', checks: { exchange: 'ok', events: 'ok', provisioner: 'ok' } };
    const draining = await get('/readyz');
    expect(draining.status).toBe(503);
    expect(JSON.stringify(draining.json)).toContain('draining: the agent is stopping (SIGTERM)');
    expect((await get('/healthz')).status).toBe(200);
    expect((await fetch(`${url}/readyz`, { method: 'POST' })).status).toBe(404);
  });

  it('are off unless GPUX_METRICS_LISTEN names an address', () => {
    const base = {
      exchangeGrpcUrl: '127.0.0.1:1',
      token: 'gpux_0123456789abcdef',
      clusterId: CLUSTER,
      provisioner: 'simulated' as const,
    };
    expect(compileAgentConfig(base, { inProcessBus: true }).metricsListen).toBeUndefined();
    expect(
      compileAgentConfig({ ...base, metricsListen: '127.0.0.1:9464' }, { inProcessBus: true })
        .metricsListen,
    ).toEqual({ host: '127.0.0.1', port: 9464 });
  });
});
