// The agent takes renewed TLS files without a restart (issue 23): the built
// agent in Kubernetes mode (against the Kubernetes API double) over mutual
// TLS to the exchange's gRPC double. Its admission webhook presents a
// renewed serving certificate to new connections once the files change
// (renamed over the old ones, as a renewal writes them); a certificate
// without its key is refused and the one in use kept; a renewed client
// certificate is what the next calls to the exchange carry. Certificates
// are made here with openssl.

import { X509Certificate } from 'node:crypto';
import {
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ExchangeDouble } from './agent-exchange-double.js';
import { signServingCert } from './k8s-double/tls.js';
import { startAgentProcess } from './support/agent-process.js';
import type { AgentProcess } from './support/agent-process.js';
import { K8sCluster } from './support/k8s-cluster.js';
import { TestCa } from './support/test-ca.js';
import { untilWith } from './support/until.js';
import { servedSerial } from '../agent/src/testing/certificates.js';

const NATS_URL = process.env['GPUX_TEST_NATS_URL'] ?? 'nats://127.0.0.1:4222';
const NODE = 'gpu-reload-1';
const dir = realpathSync(mkdtempSync(join(tmpdir(), 'gpux-agent-tls-reload-')));
const file = (name: string): string => join(dir, name);

let double: ExchangeDouble;
let cluster: K8sCluster;
let agent: AgentProcess | undefined;
let ca: TestCa;

const until = untilWith({ output: () => agent?.output() ?? '' });

const serialOf = (pem: Buffer | string): string => new X509Certificate(pem).serialNumber;

/** Written next to `path`, then renamed over it (what a renewal does; never half a file). */
function replace(path: string, content: Buffer | string): void {
  writeFileSync(`${path}.new`, content);
  renameSync(`${path}.new`, path);
}

beforeAll(async () => {
  ca = new TestCa(dir);
  const server = ca.issue('server', '127.0.0.1', 'subjectAltName=IP:127.0.0.1');
  double = new ExchangeDouble({
    natsUrl: NATS_URL,
    ackWaitMs: 1_500,
    tls: { keyPem: server.key, certPem: server.cert, clientCaPem: ca.caPem },
  });
  await double.start();
  cluster = await K8sCluster.start([NODE]);
});

afterAll(async () => {
  await agent?.stop('SIGKILL');
  await double?.close();
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('renewed TLS files, taken without a restart', () => {
  it('the webhook serves the renewed certificate, refuses one without its key, and the next gRPC calls carry the renewed client certificate', async () => {
    const first = ca.issue('client-1', 'gpux-agent', 'extendedKeyUsage=clientAuth');
    writeFileSync(file('tls.crt'), first.cert);
    writeFileSync(file('tls.key'), first.key);
    const clusterId = await double.addCluster([NODE]);
    agent = await startAgentProcess({
      ...double.agentSettings(clusterId, join(dir, 'state')),
      ...cluster.agentEnv,
      HOME: dir,
      EXCHANGE_GRPC_URL: `https://${double.url}`,
      GPUX_GRPC_CA_FILE: file('ca.pem'),
      GPUX_GRPC_CERT_FILE: file('tls.crt'),
      GPUX_GRPC_KEY_FILE: file('tls.key'),
    });
    const calls = () => double.calls.filter((c) => c.request['clusterId'] === clusterId);
    await until('a heartbeat', () => calls().some((c) => c.method === 'heartbeat'));
    expect(new Set(calls().map((c) => c.clientCertSerial?.toUpperCase()))).toEqual(
      new Set([serialOf(first.cert)]),
    );

    // The webhook: its certificate renewed (key first, then the certificate).
    const webhookPort = Number(cluster.agentEnv['GPUX_WEBHOOK_LISTEN']?.split(':')[1]);
    const certFile = cluster.agentEnv['GPUX_WEBHOOK_CERT_FILE'] ?? '';
    const keyFile = cluster.agentEnv['GPUX_WEBHOOK_KEY_FILE'] ?? '';
    expect(await servedSerial(webhookPort)).toBe(serialOf(readFileSync(certFile)));
    const renewed = signServingCert(cluster.double.certs, ['127.0.0.1']);
    replace(keyFile, renewed.keyPem);
    replace(certFile, renewed.certPem);
    await until(
      'the renewed webhook certificate served',
      async () => (await servedSerial(webhookPort)) === serialOf(renewed.certPem),
    );

    // A certificate whose key has not come: refused, the renewed one still served.
    const refusals = (): number =>
      agent?.logged(
        'the webhook certificate (GPUX_WEBHOOK_CERT_FILE, GPUX_WEBHOOK_KEY_FILE): the new files are refused, the ones in use are kept',
      ).length ?? 0;
    const refusedBefore = refusals();
    const orphan = signServingCert(cluster.double.certs, ['127.0.0.1']);
    replace(certFile, orphan.certPem);
    await until('the refusal logged', () => refusals() > refusedBefore);
    expect(await servedSerial(webhookPort)).toBe(serialOf(renewed.certPem));
    // Its key comes: served.
    replace(keyFile, orphan.keyPem);
    await until(
      'the completed pair served',
      async () => (await servedSerial(webhookPort)) === serialOf(orphan.certPem),
    );

    // The gRPC client certificate renewed: the calls from then on carry it.
    const second = ca.issue('client-2', 'gpux-agent', 'extendedKeyUsage=clientAuth');
    replace(file('tls.key'), second.key);
    replace(file('tls.crt'), second.cert);
    const switched = await until('a call with the renewed client certificate', () => {
      const i = double.calls.findIndex(
        (c) => c.clientCertSerial?.toUpperCase() === serialOf(second.cert),
      );
      return i >= 0 ? i : undefined;
    });
    const beats = double.calls.length;
    await until(
      'two more heartbeats',
      () => double.calls.slice(beats).filter((c) => c.method === 'heartbeat').length >= 2,
    );
    expect(
      new Set(double.calls.slice(switched).map((c) => c.clientCertSerial?.toUpperCase())),
    ).toEqual(new Set([serialOf(second.cert)]));
    expect(agent.logged('attached to the exchange')).toHaveLength(1);

    expect(await agent.stop('SIGTERM'), agent.output()).toBe(0);
  });
});
