// Debian's real Prometheus scrapes a running exchange and agent (issue 23,
// docs/metrics.md): the exchange with its metrics token, the agent on its
// own GPUX_METRICS_LISTEN; both targets come up, a series of each is
// queried back through Prometheus's HTTP API, and the alert rules of
// deploy/prometheus load (the watchdog fires). Without /usr/bin/prometheus
// (the prometheus package) it skips, and fails under CI
// (test/support/prerequisites.ts).

import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, describe, expect, it } from 'vitest';

import { freePort } from './support/net.js';
import { PROMETHEUS, requireProgram } from './support/prerequisites.js';
import { ProviderStack } from './support/provider-stack.js';
import { until } from './support/until.js';

const METRICS_TOKEN = 'e2e-metrics-token-0123456789abcdef';
const RULES = fileURLToPath(new URL('../deploy/prometheus/gpux.rules.yml', import.meta.url));

let stack: ProviderStack | undefined;
let prometheus: ChildProcess | undefined;
let output = '';

afterAll(async () => {
  if (prometheus?.exitCode === null) {
    const exited = new Promise((r) => prometheus?.once('exit', r));
    prometheus.kill('SIGTERM');
    await exited;
  }
  await stack?.close();
});

interface Answer {
  readonly status: string;
  readonly data: {
    readonly result?: readonly { metric: Record<string, string>; value: [number, string] }[];
    readonly activeTargets?: readonly { labels: Record<string, string>; health: string }[];
  };
}

async function api(base: string, path: string): Promise<Answer> {
  const res = await fetch(`${base}${path}`);
  return (await res.json()) as Answer;
}

describe('Prometheus scraping the exchange and the agent', () => {
  it('scrapes both, answers a query for a series of each, and fires the watchdog', async (ctx) => {
    requireProgram(ctx, PROMETHEUS);
    const agentMetricsPort = await freePort();
    stack = await ProviderStack.start({
      nodes: ['gpu-a'],
      label: 'gpux_prometheus',
      exchangeEnv: { GPUX_METRICS_TOKEN: METRICS_TOKEN },
      agentEnv: { GPUX_METRICS_LISTEN: `127.0.0.1:${agentMetricsPort}` },
    });
    const port = await freePort();
    copyFileSync(RULES, join(stack.dir, 'gpux.rules.yml'));
    writeFileSync(join(stack.dir, 'metrics-token'), METRICS_TOKEN);
    const config = join(stack.dir, 'prometheus.yml');
    writeFileSync(
      config,
      JSON.stringify({
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        rule_files: [join(stack.dir, 'gpux.rules.yml')],
        scrape_configs: [
          {
            job_name: 'gpux-exchange',
            authorization: { credentials_file: join(stack.dir, 'metrics-token') },
            static_configs: [{ targets: [stack.url.replace('http://', '')] }],
          },
          {
            job_name: 'gpux-agent',
            static_configs: [{ targets: [`127.0.0.1:${agentMetricsPort}`] }],
          },
        ],
      }),
    );
    prometheus = spawn(
      PROMETHEUS.program,
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(stack.dir, 'prometheus-data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prometheus.stdout?.on('data', (b: Buffer) => (output += b.toString()));
    prometheus.stderr?.on('data', (b: Buffer) => (output += b.toString()));
    const base = `http://127.0.0.1:${port}`;
    const polling = { timeoutMs: 60_000, everyMs: 250, output: () => output.slice(-4000) };

    // Both targets scraped and up (the exchange's token accepted).
    await until(
      'both targets up',
      async () => {
        const t = await api(base, '/api/v1/targets').catch(() => undefined);
        const targets = t?.data.activeTargets ?? [];
        return targets.length === 2 && targets.every((x) => x.health === 'up');
      },
      polling,
    );

    const query = async (q: string) =>
      (await api(base, `/api/v1/query?query=${encodeURIComponent(q)}`)).data.result ?? [];
    /** The first answer to `q` that has a series. */
    const series = (what: string, q: string) =>
      until(
        what,
        async () => {
          const r = await query(q);
          return r.length > 0 ? r : undefined;
        },
        polling,
      );
    const owner = await series('gpux_market_owner', 'gpux_market_owner{job="gpux-exchange"}');
    expect(owner[0]?.value[1]).toBe('1');
    const heartbeats = await series(
      "the agent's answered heartbeats",
      'gpux_agent_heartbeats_total{job="gpux-agent",result="ok"} > 0',
    );
    expect(Number(heartbeats[0]?.value[1])).toBeGreaterThan(0);
    // The exchange counted the agent's heartbeats too (told by its agents' process).
    await series(
      "the exchange's count of Heartbeat calls",
      'gpux_grpc_calls_total{method="Heartbeat",code="OK"} > 0',
    );
    await series('the watchdog firing', 'ALERTS{alertname="GpuxWatchdog",alertstate="firing"}');
  });
});
