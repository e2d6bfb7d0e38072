// The data out of the exchange (issue 22) through `gpux` (docs/cli.md): the
// built command as a child process against the built exchange. After a
// trade, `gpux candles` shows its candle and `gpux events` the buyer's fill;
// `gpux events --watch` follows the account stream and, when the exchange is
// killed and started again, resumes with Last-Event-ID: no event missed or
// shown twice. `gpux webhooks` creates an endpoint (its secret shown once),
// lists it, shows its deliveries to a receiver on 127.0.0.1, test-sends and
// deletes it.
//
// Webhooks may point at http://127.0.0.1 only in development, an exchange on
// its embedded database (docs/api/webhooks.md, "Endpoint URLs"): this one
// runs on one, with its own data directory, on a fixed port so that the
// command finds it again after the restart.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Not part of the exchange's package (left out of its dist): listed by path in test/tsconfig.json.
import { WebhookReceiver } from '../exchange/src/webhooks/testing/receiver.js';
import type { ReceiverEndpoint } from '../exchange/src/webhooks/testing/receiver.js';
import { callApi } from './support/api.js';
import { jsonOf } from './support/customer-cli.js';
import { GPUX, runGpux } from './support/gpux-cli.js';
import type { GpuxRun } from './support/gpux-cli.js';
import { startExchangeProcess } from './support/exchange-process.js';
import type { ExchangeProcess } from './support/exchange-process.js';
import { freePort } from './support/net.js';
import { until } from './support/until.js';

const ADMIN_TOKEN = 'cli-data-out-admin-token-0123456789abcdef';
const BOOK = { gpu_type: 'h100', zone: 'eu-west-1' } as const;

const dataDir = mkdtempSync(join(tmpdir(), 'gpux-cli-data-out-'));
const receiver = new WebhookReceiver();
let port = 0;
let ex: ExchangeProcess | undefined;
let provider = '';
let buyer = '';
let hook: ReceiverEndpoint;
let webhookId = '';

const url = (): string => `http://127.0.0.1:${port}`;
const output = (): string => ex?.output() ?? '';

async function startExchange(): Promise<void> {
  ex = await startExchangeProcess({
    DATABASE_URL: '',
    NATS_URL: '',
    PORT: String(port),
    GPUX_DATA_DIR: dataDir,
    GPUX_ADMIN_TOKEN: ADMIN_TOKEN,
    // The webhooks' secrets are sealed with it: the same key after the restart.
    GPUX_SECRET_KEY: Buffer.alloc(32, 9).toString('base64'),
  });
}

async function call(method: string, path: string, token: string, body?: unknown) {
  const a = await callApi(url(), method, path, token, body);
  if (a.status >= 300) throw new Error(`${method} ${path}: ${a.status} ${a.text}`);
  return a.json;
}

/** gpux as the buyer, the exchange and its token from the environment. */
function gpux(...args: string[]): Promise<GpuxRun> {
  return runGpux(args, envOf());
}

function envOf(): NodeJS.ProcessEnv {
  return { GPUX_URL: url(), GPUX_API_TOKEN: buyer, XDG_CONFIG_HOME: join(dataDir, 'config') };
}

/** A limit order of 8 GPUs in BOOK; its id. */
async function order(token: string, side: 'buy' | 'sell', price: number): Promise<string> {
  const o = await call('POST', '/v1/orders', token, {
    side,
    ...BOOK,
    gpu_count: 8,
    duration_hours: side === 'sell' ? 48 : 2,
    limit_price: price,
  });
  return o['order_id'] as string;
}

interface Event {
  readonly seq: number;
  readonly type: string;
  readonly id: string;
  readonly data: Record<string, unknown>;
}

const lines = (text: string): Event[] =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Event);

beforeAll(async () => {
  await receiver.listen();
  port = await freePort();
  await startExchange();
  const account = async (name: string, scopes: string[]): Promise<Record<string, unknown>> =>
    call('POST', '/v1/admin/accounts', ADMIN_TOKEN, { name, organization: name, scopes });
  const p = await account('farm', ['trade', 'read', 'leases', 'provider']);
  const b = await account('lab', ['trade', 'read', 'leases']);
  await call('POST', '/v1/admin/clusters', ADMIN_TOKEN, {
    provider_account_id: p['account_id'],
    ...BOOK,
    nodes: [{ hostname: 'gpu-0' }, { hostname: 'gpu-1' }],
  });
  provider = p['token'] as string;
  buyer = b['token'] as string;
  hook = receiver.endpoint('hook', 0);
}, 60_000);

afterAll(async () => {
  await ex?.stop('SIGKILL');
  await receiver.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('gpux candles, events and webhooks', () => {
  it('webhooks create shows the secret once with a note to keep it; list shows the endpoint without it', async () => {
    const refused = await gpux(
      'webhooks',
      'create',
      'http://example.com/x',
      '--events',
      'order.filled',
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^gpux: invalid_request: .*\(HTTP 400\)$/m);
    expect((await gpux('webhooks', 'create', hook.url, '--events', 'order.nope')).code).toBe(2);

    const created = await gpux(
      'webhooks',
      'create',
      hook.url,
      '--events',
      'order.filled,transaction.posted',
    );
    expect(created.code, created.stderr).toBe(0);
    hook.secret = /^secret +(whsec_\S+)$/m.exec(created.stdout)?.[1] ?? '';
    webhookId = /^webhook +(whk_\S+)$/m.exec(created.stdout)?.[1] ?? '';
    expect(hook.secret, created.stdout).not.toBe('');
    expect(created.stdout).toContain('Keep the secret now: it is shown this once');

    const list = await gpux('webhooks', 'list');
    expect(list.stdout).toMatch(
      new RegExp(`^${webhookId} +${hook.url} +order\\.filled,transaction\\.posted +\\d{4}-`, 'm'),
    );
    expect(list.stdout).not.toContain(hook.secret);
    expect(jsonOf(await gpux('webhooks', 'list', '--json'))).toEqual(
      await call('GET', '/v1/webhooks', buyer),
    );
  });

  it('after a trade, candles show it at $2.50 and events show the fill', async () => {
    await order(provider, 'sell', 2.5);
    const buy = await order(buyer, 'buy', 2.5);
    const all = await until(
      'the fill among the events',
      async () => {
        const r = await gpux('events', '--since', '0', '--json');
        expect(r.code, r.stderr).toBe(0);
        const events = lines(r.stdout);
        return events.some((e) => e.type === 'order.filled') && events;
      },
      { output },
    );
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
    const shown = await gpux('events');
    expect(shown.stdout).toMatch(
      new RegExp(
        `^\\S+ \\S+ \\S+ +#\\d+ +order\\.filled +${buy} buy 8xh100 in eu-west-1: 8 GPUs at \\$2\\.50/GPU-h for 2 h \\(8 of 8 filled\\), lease lse_\\S+$`,
        'm',
      ),
    );
    expect(shown.stdout).toMatch(/#\d+ +transaction\.posted +txn_\S+ lease_charge -\$\d+\.\d\d/);
    const past = await gpux('events', '--since', '999');
    expect(past.code).toBe(2);
    expect(past.stderr).toContain("--since 999: the account's last event is");

    const candles = await gpux('candles', 'h100', 'eu-west-1', '--granularity', '60');
    expect(candles.code, candles.stderr).toBe(0);
    expect(candles.stdout).toMatch(/^h100 in eu-west-1, 1 min candles, \$\/GPU-h$/m);
    expect(candles.stdout).toMatch(
      /^\d{4}-\d\d-\d\d \d\d:\d\d:00 \S+ +\$2\.50 +\$2\.50 +\$2\.50 +\$2\.50 +8 +16 +1$/m,
    );
    const json = jsonOf(
      await gpux('candles', 'h100', 'eu-west-1', '--granularity', '60', '--json'),
    );
    const q = `gpu_type=h100&zone=eu-west-1&granularity=60&start=${String(json['start'])}`;
    expect(json['candles']).toEqual((await call('GET', `/v1/candles?${q}`, buyer))['candles']);
    const other = await gpux('candles', 'h100', 'us-east-1', '--last', '5');
    expect(other.stdout).toMatch(/^\(none\)$/m);
  });

  it('events --watch follows the stream and resumes across a restart of the exchange', async () => {
    const child = spawn(process.execPath, [GPUX, 'events', '--watch', '--json'], {
      env: { ...process.env, ...envOf() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    const both = (): string => `${output()}\n${err}`;
    try {
      await until('the fill', () => lines(out).some((e) => e.type === 'order.filled'), {
        output: both,
      });
      const before = lines(out).length;
      await ex?.stop('SIGKILL');
      await startExchange();
      const resting = await order(buyer, 'buy', 1.5);
      await call('DELETE', `/v1/orders/${resting}`, buyer);
      await until(
        'the cancellation after the restart',
        () =>
          lines(out).some((e) => e.type === 'order.cancelled' && e.data['order_id'] === resting),
        { output: both },
      );
      const seqs = lines(out).map((e) => e.seq);
      const first = seqs[0] ?? 0;
      expect(seqs).toEqual(seqs.map((_, i) => first + i));
      expect(seqs.length).toBeGreaterThan(before);
      expect(err).toContain('gpux: reconnecting');
    } finally {
      child.kill('SIGINT');
    }
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
  });

  it('webhooks deliveries show what reached the receiver; test sends one; delete stops it', async () => {
    const fill = await until('the fill delivered', () =>
      hook.receipts.find((r) => r.type === 'order.filled' && r.status === 200),
    );
    const deliveries = await gpux('webhooks', 'deliveries', webhookId);
    expect(deliveries.code, deliveries.stderr).toBe(0);
    expect(deliveries.stdout).toMatch(
      new RegExp(`^whd_\\S+ +${fill.seq} +order\\.filled +delivered +1 +HTTP 200 in \\d+ ms`, 'm'),
    );
    expect(hook.refused).toEqual([]);

    const test = await gpux('webhooks', 'test', webhookId);
    expect(test.stdout).toMatch(/^queued test delivery whd_\S+/);
    await until('the test delivery', () => hook.receipts.some((r) => r.type === 'webhook.test'), {
      output,
    });
    const page = jsonOf(await gpux('webhooks', 'deliveries', webhookId, '--json', '--limit', '1'));
    expect(page['deliveries']).toMatchObject([{ type: 'webhook.test', seq: null }]);

    const deleted = await gpux('webhooks', 'delete', webhookId);
    expect(deleted.stdout).toBe(`deleted ${webhookId}: nothing more is sent to it\n`);
    expect((await gpux('webhooks', 'list')).stdout).toBe('(none)\n');
    expect((await gpux('webhooks', 'delete', webhookId)).code).toBe(4);
  });
});
