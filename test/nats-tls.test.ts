// NATS with TLS as deploy/nats/README.md shows it: a server with a `tls`
// block (a certificate from a private CA, made here with openssl) requires
// TLS of every client; the built exchange's and agent's NATS clients connect
// to it with their usual settings (the exchange `nats://`, which takes TLS
// when the server requires it, the agent `tls://`, TLS or nothing) once Node.js trusts the CA through NODE_EXTRA_CA_CERTS, which
// it reads at start: so each side runs in a process of its own.

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
import { PrivateNats } from './support/nats-server.js';

const dir = mkdtempSync(join(tmpdir(), 'gpux-nats-tls-'));
const file = (name: string): string => join(dir, name);
const cluster = newId('cls_');
const root = fileURLToPath(new URL('..', import.meta.url));
const dist = (path: string): string => pathToFileURL(join(root, path)).href;
let nats: PrivateNats;

/**
 * The exchange publishes an event for the cluster and the agent reads it,
 * each connecting as it does in production; prints what happened, or
 * `no connection` when a client has not connected within its bound.
 */
const SCRIPT = `
const { JetStreamPublisher, SILENT_LOGGER } = await import(${JSON.stringify(dist('exchange/dist/index.js'))});
const { NatsEventStream } = await import(${JSON.stringify(dist('agent/dist/events/nats-event-stream.js'))});
const { parseNatsCredentials, agentConsumerName, agentInboxPrefix, EVENT_STREAM } = await import(${JSON.stringify(dist('shared/dist/index.js'))});
const { readFileSync } = await import('node:fs');
const [exchangeUrl, agentUrl, cluster, dir] = process.argv.slice(2);
// Both clients retry forever on a certificate they do not trust: this bound
// only ends the wait for a connection that is not coming.
const bound = (p) => Promise.race([p, new Promise((r) => setTimeout(() => r(undefined), 8000))]);
const publisher = await bound(JetStreamPublisher.connect({ url: exchangeUrl, credsFile: dir + '/exchange.nk', logger: SILENT_LOGGER }));
if (publisher === undefined) { console.log('no connection'); process.exit(1); }
await publisher.ensureAgentConsumer(cluster);
await publisher.publish('gpux.cluster.' + cluster + '.lease.provision', 'evt_tls', '{"over":"tls"}');
const stream = await bound(NatsEventStream.connect({
  url: agentUrl,
  creds: parseNatsCredentials(readFileSync(dir + '/agent.nk', 'utf8')),
  source: { stream: EVENT_STREAM, consumer: agentConsumerName(cluster), inboxPrefix: agentInboxPrefix(cluster) },
  name: 'gpux-agent',
  logger: SILENT_LOGGER,
}));
if (stream === undefined) { console.log('no connection'); process.exit(1); }
const got = await new Promise((resolve) => void stream.consume((m) => resolve(m)));
console.log(JSON.stringify({ published: true, received: got.subject }));
process.exit(0);
`;

/** Both clients in a process, trusting the test CA or not. */
async function clients(trustCa: boolean): Promise<{ code: number; stdout: string }> {
  const args = [file('clients.mjs'), `nats://localhost:${nats.port}`];
  args.push(`tls://localhost:${nats.port}`, cluster, dir);
  const env = { ...process.env };
  delete env['NODE_EXTRA_CA_CERTS'];
  if (trustCa) env['NODE_EXTRA_CA_CERTS'] = file('ca.crt');
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
  nats = await PrivateNats.start(
    `tls {\n  cert_file: ${JSON.stringify(file('server.crt'))}\n  key_file: ${JSON.stringify(file('server.key'))}\n}\n` +
      authorizationBlock([
        { nkey: exchange.getPublicKey(), permissions: exchangePermissions(), comment: 'exchange' },
        {
          nkey: agent.getPublicKey(),
          permissions: agentPermissions(cluster),
          comment: `agent of ${cluster}`,
        },
      ]),
  );
}, 60_000);

afterAll(async () => {
  await nats?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('NATS with TLS (deploy/nats/README.md)', () => {
  it("the exchange (nats://) and the agent (tls://) connect once NODE_EXTRA_CA_CERTS names the server's CA", async () => {
    const r = await clients(true);
    expect(r, r.stdout).toMatchObject({ code: 0 });
    expect(JSON.parse(r.stdout)).toEqual({
      published: true,
      received: `gpux.cluster.${cluster}.lease.provision`,
    });
  });

  it('without the CA they do not connect: the server certificate is verified', async () => {
    const r = await clients(false);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toContain('no connection');
  });
});
