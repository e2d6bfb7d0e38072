// NATS with TLS as deploy/nats/README.md shows it: a server with a `tls`
// block (a certificate from a private CA, made here with openssl) requires
// TLS of every client. The built exchange's and agent's NATS clients, which
// connect through the one helper of shared/src/nats-connection.ts, reach it
// with `tls://` (TLS or nothing) or `nats://` (TLS when the server requires
// it) once Node.js trusts the CA through NODE_EXTRA_CA_CERTS, which it reads
// at start: so each side runs in a process of its own. A `tls://` URL to a
// server without TLS is refused by both, and the built exchange says in its
// banner what it is connected to.

import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

import { createUser } from '@nats-io/nkeys';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { agentPermissions, authorizationBlock, exchangePermissions } from '@gpux/exchange';
import { newId } from '@gpux/shared';

import { makeCerts } from './k8s-double/tls.js';
import { startExchangeProcess } from './support/exchange-process.js';
import { PrivateNats } from './support/nats-server.js';

const dir = mkdtempSync(join(tmpdir(), 'gpux-nats-tls-'));
const file = (name: string): string => join(dir, name);
const cluster = newId('cls_');
const root = fileURLToPath(new URL('..', import.meta.url));
const dist = (path: string): string => pathToFileURL(join(root, path)).href;
/** The server with TLS, and one without (same users). */
let nats: PrivateNats;
let plain: PrivateNats;

/**
 * The exchange's and the agent's NATS clients, each connecting as it does
 * in production (`mode` both: the exchange publishes an event for the
 * cluster and the agent reads it; exchange or agent: that one connects);
 * prints what happened, or `no connection` when a client has not connected
 * within `boundMs`.
 */
const SCRIPT = `
const { JetStreamPublisher, SILENT_LOGGER } = await import(${JSON.stringify(dist('exchange/dist/index.js'))});
const { NatsEventStream } = await import(${JSON.stringify(dist('agent/dist/events/nats-event-stream.js'))});
const { parseNatsCredentials, agentConsumerName, agentInboxPrefix, EVENT_STREAM } = await import(${JSON.stringify(dist('shared/dist/index.js'))});
const { readFileSync } = await import('node:fs');
const [mode, exchangeUrl, agentUrl, cluster, dir, boundMs] = process.argv.slice(2);
// Both clients retry forever on a certificate they do not trust or a server
// without TLS: this bound only ends the wait for a connection that is not coming.
const bound = (p) => Promise.race([p, new Promise((r) => setTimeout(() => r(undefined), Number(boundMs)))]);
const fail = () => { console.log('no connection'); process.exit(1); };
const agent = () => bound(NatsEventStream.connect({
  url: agentUrl,
  creds: parseNatsCredentials(readFileSync(dir + '/agent.nk', 'utf8')),
  source: { stream: EVENT_STREAM, consumer: agentConsumerName(cluster), inboxPrefix: agentInboxPrefix(cluster) },
  name: 'gpux-agent',
  logger: SILENT_LOGGER,
}));
if (mode === 'agent') {
  if ((await agent()) === undefined) fail();
  console.log(JSON.stringify({ connected: 'agent' }));
  process.exit(0);
}
const publisher = await bound(JetStreamPublisher.connect({ url: exchangeUrl, credsFile: dir + '/exchange.nk', logger: SILENT_LOGGER }));
if (publisher === undefined) fail();
if (mode === 'exchange') {
  console.log(JSON.stringify({ connected: 'exchange', describe: publisher.describe() }));
  process.exit(0);
}
await publisher.ensureAgentConsumer(cluster);
// An id of its own: the stream stores an id published again only once.
await publisher.publish('gpux.cluster.' + cluster + '.lease.provision', 'evt_tls_' + Date.now(), '{"over":"tls"}');
const stream = await agent();
if (stream === undefined) fail();
const got = await new Promise((resolve) => void stream.consume((m) => void m.ack().then(() => resolve(m))));
console.log(JSON.stringify({ published: true, received: got.subject, exchange: publisher.describe() }));
process.exit(0);
`;

interface Clients {
  readonly mode: 'both' | 'exchange' | 'agent';
  readonly exchangeUrl?: string;
  readonly agentUrl?: string;
  readonly trustCa: boolean;
  readonly boundMs?: number;
}

/** The clients in a process of their own, trusting the test CA or not. */
async function clients(c: Clients): Promise<{ code: number; stdout: string }> {
  const args = [file('clients.mjs'), c.mode, c.exchangeUrl ?? '', c.agentUrl ?? ''];
  args.push(cluster, dir, String(c.boundMs ?? 8000));
  const env = { ...process.env };
  delete env['NODE_EXTRA_CA_CERTS'];
  if (c.trustCa) env['NODE_EXTRA_CA_CERTS'] = file('ca.crt');
  try {
    const r = await promisify(execFile)(process.execPath, args, { env });
    return { code: 0, stdout: r.stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: `${e.stdout}${e.stderr}` };
  }
}

beforeAll(async () => {
  const certs = makeCerts();
  writeFileSync(file('clients.mjs'), SCRIPT);
  writeFileSync(file('ca.crt'), certs.caPem);
  writeFileSync(file('server.crt'), certs.certPem);
  writeFileSync(file('server.key'), certs.keyPem, { mode: 0o600 });
  const exchange = createUser();
  const agent = createUser();
  const seed = (u: typeof agent): string => new TextDecoder().decode(u.getSeed());
  writeFileSync(file('exchange.nk'), seed(exchange), { mode: 0o600 });
  writeFileSync(file('agent.nk'), seed(agent), { mode: 0o600 });
  const users = authorizationBlock([
    { nkey: exchange.getPublicKey(), permissions: exchangePermissions(), comment: 'exchange' },
    {
      nkey: agent.getPublicKey(),
      permissions: agentPermissions(cluster),
      comment: `agent of ${cluster}`,
    },
  ]);
  nats = await PrivateNats.start(
    `tls {\n  cert_file: ${JSON.stringify(file('server.crt'))}\n  key_file: ${JSON.stringify(file('server.key'))}\n}\n` +
      users,
  );
  plain = await PrivateNats.start(users);
}, 60_000);

afterAll(async () => {
  await nats?.stop();
  await plain?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('NATS with TLS (deploy/nats/README.md)', () => {
  const tls = (): string => `tls://localhost:${nats.port}`;

  it("the exchange and the agent connect with tls:// once NODE_EXTRA_CA_CERTS names the server's CA", async () => {
    const r = await clients({ mode: 'both', exchangeUrl: tls(), agentUrl: tls(), trustCa: true });
    expect(r, r.stdout).toMatchObject({ code: 0 });
    expect(JSON.parse(r.stdout)).toEqual({
      published: true,
      received: `gpux.cluster.${cluster}.lease.provision`,
      exchange: `tls://localhost:${nats.port}, TLS`,
    });
  });

  it('with nats:// both take the TLS the server requires', async () => {
    const url = `nats://localhost:${nats.port}`;
    const r = await clients({ mode: 'both', exchangeUrl: url, agentUrl: url, trustCa: true });
    expect(r, r.stdout).toMatchObject({ code: 0 });
    expect(JSON.parse(r.stdout)).toMatchObject({ exchange: `nats://localhost:${nats.port}, TLS` });
  });

  it('without the CA they do not connect: the server certificate is verified', async () => {
    const r = await clients({ mode: 'both', exchangeUrl: tls(), agentUrl: tls(), trustCa: false });
    expect(r.code).not.toBe(0);
    expect(r.stdout).toContain('no connection');
  });

  it('tls:// is TLS or nothing: neither connects to a server without TLS, which nats:// reaches', async () => {
    const url = (scheme: string): string => `${scheme}://127.0.0.1:${plain.port}`;
    for (const mode of ['exchange', 'agent'] as const) {
      const over = await clients({
        mode,
        exchangeUrl: url('nats'),
        agentUrl: url('nats'),
        trustCa: false,
      });
      expect(over, over.stdout).toMatchObject({ code: 0 });
      expect(JSON.parse(over.stdout)).toMatchObject(
        mode === 'exchange'
          ? { connected: mode, describe: `${url('nats')}, no TLS` }
          : { connected: mode },
      );
      const refused = await clients({
        mode,
        exchangeUrl: url('tls'),
        agentUrl: url('tls'),
        trustCa: false,
        boundMs: 3000,
      });
      expect(refused.code, refused.stdout).not.toBe(0);
      expect(refused.stdout).toContain('no connection');
    }
  });

  it('the built exchange connects with NATS_URL=tls:// and says so in its banner', async () => {
    const ex = await startExchangeProcess({
      NATS_URL: tls(),
      NATS_CREDS: file('exchange.nk'),
      NODE_EXTRA_CA_CERTS: file('ca.crt'),
      GPUX_DATA_DIR: mkdtempSync(join(dir, 'data-')),
      DATABASE_URL: '',
    });
    try {
      expect(ex.output()).toMatch(
        new RegExp(
          `^events: NATS JetStream tls://localhost:${nats.port}, TLS, stream GPUX_EVENTS, credentials ${file('exchange.nk')}$`,
          'm',
        ),
      );
      expect(ex.output()).toMatch(/^database: embedded PGlite in .*pgdata/m);
      expect(ex.output()).toMatch(/^agents' gRPC service on port \d+ of 127\.0\.0\.1, plain text/m);
    } finally {
      expect(await ex.stop()).toBe(0);
    }
  });
});
