// The agent reaches the exchange over TLS: it verifies the exchange's
// certificate with GPUX_GRPC_CA_FILE and presents its own client
// certificate (GPUX_GRPC_CERT_FILE / GPUX_GRPC_KEY_FILE) to an exchange
// double that requires one. Certificates are made here with openssl.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ExchangeDouble } from './agent-exchange-double.js';
import { startAgentProcess } from './support/agent-process.js';
import type { AgentProcess } from './support/agent-process.js';
import { TestCa } from './support/test-ca.js';

const NATS_URL = process.env['GPUX_TEST_NATS_URL'] ?? 'nats://127.0.0.1:4222';
const dir = mkdtempSync(join(tmpdir(), 'gpux-agent-tls-'));
const file = (name: string): string => join(dir, name);

let double: ExchangeDouble;
let agent: AgentProcess | undefined;

beforeAll(async () => {
  const ca = new TestCa(dir);
  const server = ca.issue('server', '127.0.0.1', 'subjectAltName=IP:127.0.0.1');
  ca.issue('client', 'gpux-agent', 'extendedKeyUsage=clientAuth');
  double = new ExchangeDouble({
    natsUrl: NATS_URL,
    ackWaitMs: 1_500,
    tls: {
      keyPem: server.key,
      certPem: server.cert,
      clientCaPem: ca.caPem,
    },
  });
  await double.start();
});

afterAll(async () => {
  await agent?.stop('SIGKILL');
  await double?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('agent over TLS', () => {
  it('verifies the exchange with its CA file and presents its client certificate', async () => {
    const clusterId = await double.addCluster(['tls-1']);
    agent = await startAgentProcess({
      ...double.agentSettings(clusterId, join(dir, 'state')),
      HOME: dir,
      EXCHANGE_GRPC_URL: `https://${double.url}`,
      GPUX_GRPC_CA_FILE: file('ca.pem'),
      GPUX_GRPC_CERT_FILE: file('client.pem'),
      GPUX_GRPC_KEY_FILE: file('client.key'),
      PROVISIONER: 'simulated',
    });
    for (let i = 0; i < 400 && double.of('heartbeat', clusterId).length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(double.of('attach', clusterId), agent.output()).toHaveLength(1);
    expect(double.of('heartbeat', clusterId).length, agent.output()).toBeGreaterThan(0);
    expect(await agent.stop('SIGTERM'), agent.output()).toBe(0);
  });
});
