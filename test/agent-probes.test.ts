// The agent's probes end to end (issue 23, agent/src/probes.ts): the built
// agent beside a real exchange process on PostgreSQL and NATS, its
// GET /healthz and GET /readyz on GPUX_METRICS_LISTEN. /readyz is 503 while
// the exchange cannot be reached (before the first Attach, and when its
// heartbeats are no longer answered), 200 once attached and consuming
// events, and 503 again from SIGTERM on while the agent drains lease work in
// flight; /healthz stays 200 all along, until the process exits.

import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { freePort } from './support/net.js';
import { ProviderStack } from './support/provider-stack.js';

let stack: ProviderStack | undefined;

afterAll(async () => {
  await stack?.close();
});

interface Probe {
  readonly status: number;
  readonly json: Record<string, unknown>;
}

describe("the agent's /healthz and /readyz", () => {
  it('503 before attach and while the exchange is away, 200 when attached, 503 while draining', async () => {
    const probePort = await freePort();
    stack = await ProviderStack.start({
      nodes: ['gpu-p'],
      label: 'gpux_agent_probes',
      startAgent: false,
      agentEnv: {
        GPUX_METRICS_LISTEN: `127.0.0.1:${probePort}`,
        // Lease work in flight when SIGTERM comes, so the drain lasts.
        GPUX_SIMULATED_PROVISION_DELAY_MS: '600000',
        GPUX_DRAIN_TIMEOUT_SECONDS: '60',
      },
    });
    const s = stack;
    const probe = async (path: string): Promise<Probe | undefined> => {
      try {
        const res = await fetch(`http://127.0.0.1:${probePort}${path}`);
        return { status: res.status, json: (await res.json()) as Record<string, unknown> };
      } catch {
        return undefined; // not listening (yet, or any more)
      }
    };
    const checksOf = (p: Probe): Record<string, string> => {
      const error = p.json['error'] as { checks?: Record<string, string> } | undefined;
      return error?.checks ?? (p.json['checks'] as Record<string, string>);
    };

    // Before attach: the exchange is down when the agent starts.
    await s.stopExchange('SIGTERM');
    const agent = await s.startAgent({}, { waitReady: false });
    const early = await s.waitFor('the probes listening', () => probe('/readyz'));
    expect(early.status).toBe(503);
    expect(early.json).toMatchObject({
      data: null,
      error: { code: 'unavailable', phase: 'attaching' },
    });
    expect(checksOf(early)['exchange']).toBe('not attached yet');
    expect(await probe('/healthz')).toEqual({ status: 200, json: { status: 'ok' } });

    // The exchange comes: attached, consuming events, ready.
    await s.startExchange();
    const ready = await s.waitFor('ready', async () => {
      const p = await probe('/readyz');
      return p?.status === 200 ? p : undefined;
    });
    expect(ready.json).toEqual({
      status: 'ready',
      phase: 'running',
      checks: { exchange: 'ok', events: 'ok', provisioner: 'ok' },
    });
    expect(agent.logged('consuming lease events')).toHaveLength(1);

    // The exchange goes away: the heartbeats are not answered, not ready; back: ready again.
    await s.stopExchange('SIGKILL');
    const away = await s.waitFor('not ready without the exchange', async () => {
      const p = await probe('/readyz');
      return p?.status === 503 ? p : undefined;
    });
    expect(checksOf(away)['exchange']).toMatch(/^the last heartbeat was not answered: Heartbeat: /);
    expect(checksOf(away)['provisioner']).toBe('ok');
    await s.startExchange();
    await s.waitFor('ready again', async () => (await probe('/readyz'))?.status === 200);

    // Draining: lease work under way (the slowed provisioner), then SIGTERM.
    await s.waitForAsks(8);
    const order = await s.buyNode();
    const leaseId = order['lease_id'] as string;
    await s.waitFor('provisioning under way', () =>
      existsSync(join(s.agentStateDir, 'workspaces', leaseId, 'lease.json')),
    );
    agent.child.kill('SIGTERM');
    await s.waitFor('draining logged', () => agent.logged('draining').length > 0);
    const draining = await probe('/readyz');
    expect(draining?.status).toBe(503);
    expect(draining?.json).toMatchObject({ error: { code: 'unavailable', phase: 'draining' } });
    expect((draining?.json['error'] as { message: string }).message).toContain(
      'draining: the agent is stopping (SIGTERM)',
    );
    // Alive while it drains: a liveness probe must not kill the drain.
    expect((await probe('/healthz'))?.status).toBe(200);
    // The drain still going: nothing was reported for the lease yet.
    expect(agent.logged('stopped')).toEqual([]);

    // A second signal ends it at once (exit 1); the probes go with it.
    agent.child.kill('SIGTERM');
    expect(await agent.exited()).toBe(1);
    stack.agent = undefined;
    expect(await probe('/healthz')).toBeUndefined();
  });
});
