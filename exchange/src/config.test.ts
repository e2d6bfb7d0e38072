import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { ConfigError, DEFAULT_CONFIG, loadConfig } from './config.js';

const dir = mkdtempSync(join(tmpdir(), 'gpux-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, content: string): string => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};

function problemsOf(env: Record<string, string>, args: string[] = []): readonly string[] {
  try {
    loadConfig(env, args);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('loadConfig', () => {
  it('falls back to the embedded defaults', () => {
    expect(loadConfig({})).toEqual(DEFAULT_CONFIG);
    expect(loadConfig({ HOST: '', PORT: ' ' })).toEqual(DEFAULT_CONFIG);
  });

  it('reads HOST, PORT and LOG_LEVEL', () => {
    expect(loadConfig({ HOST: '0.0.0.0', PORT: '0', LOG_LEVEL: 'silent' })).toEqual({
      ...DEFAULT_CONFIG,
      host: '0.0.0.0',
      // Without GRPC_HOST, the gRPC service listens where the REST API does.
      grpcHost: '0.0.0.0',
      port: 0,
      logLevel: 'silent',
    });
  });

  it('GRPC_HOST gives the gRPC service an address of its own', () => {
    expect(loadConfig({})).toMatchObject({ host: '127.0.0.1', grpcHost: '127.0.0.1' });
    expect(loadConfig({ HOST: '127.0.0.1', GRPC_HOST: '0.0.0.0' })).toMatchObject({
      host: '127.0.0.1',
      grpcHost: '0.0.0.0',
    });
    expect(loadConfig({ GRPC_HOST: '::' }).grpcHost).toBe('::');
  });

  it('flags mirror the variables and win over them', () => {
    const c = loadConfig({ PORT: '1234', GRPC_PORT: '1' }, [
      '--port',
      '8081',
      '--grpc-host=0.0.0.0',
      '--rate-orders-per-minute',
      '50',
    ]);
    expect(c).toMatchObject({ port: 8081, grpcHost: '0.0.0.0', grpcPort: 1 });
    expect(c.rateLimits.create).toBe(50);
    expect(problemsOf({}, ['--frobnicate', '--port'])).toEqual([
      'unknown argument "--frobnicate" (see --help)',
      '--port needs a value',
    ]);
  });

  it('gRPC TLS: a certificate and its key together; a client CA needs them', () => {
    const cert = file('grpc.crt', 'CERT');
    const key = file('grpc.key', 'KEY');
    const ca = file('ca.crt', 'CA');
    expect(
      loadConfig({ GRPC_TLS_CERT: cert, GRPC_TLS_KEY: key, GRPC_TLS_CLIENT_CA: ca }).grpcTls,
    ).toEqual({ certFile: cert, keyFile: key, clientCaFile: ca });
    expect(problemsOf({ GRPC_TLS_CERT: cert })).toEqual([
      'GRPC_TLS_CERT and GRPC_TLS_KEY go together: set both or neither',
    ]);
    expect(problemsOf({ GRPC_TLS_CLIENT_CA: ca })).toEqual([
      'GRPC_TLS_CLIENT_CA needs GRPC_TLS_CERT and GRPC_TLS_KEY',
    ]);
    expect(problemsOf({ GRPC_TLS_CERT: join(dir, 'none'), GRPC_TLS_KEY: key })).toEqual([
      `GRPC_TLS_CERT must name a readable file (ENOENT), got "${join(dir, 'none')}"`,
    ]);
  });

  it('refuses PostgreSQL without NATS unless the in-process bus is asked for (agents would never hear of a fill)', () => {
    const pg = { DATABASE_URL: 'postgres://gpux@db.example.com/gpux' };
    expect(problemsOf(pg)).toEqual([
      'DATABASE_URL needs NATS_URL: agents hear of fills only through NATS; set GPUX_IN_PROCESS_BUS=1 to publish to this process alone on purpose',
    ]);
    expect(problemsOf({ ...pg, NATS_URL: 'nats://nats.example.com:4222' })).toEqual([]);
    expect(loadConfig({ ...pg, GPUX_IN_PROCESS_BUS: '1' }).natsUrl).toBeUndefined();
    // The embedded database keeps the in-process bus by default.
    expect(problemsOf({})).toEqual([]);
  });

  it('NATS: a nats:// or tls:// URL, never repeated in a problem; credentials read at start', () => {
    const seed = file('exchange.nk', `SU${'A'.repeat(56)}\n`);
    expect(loadConfig({ NATS_URL: 'tls://nats.example:4222', NATS_CREDS: seed })).toMatchObject({
      natsUrl: 'tls://nats.example:4222',
      natsCredsFile: seed,
    });
    expect(problemsOf({ NATS_URL: 'http://user:secret@nats' })).toEqual([
      'NATS_URL must be nats://[user:password@]host[:port] or tls://…',
    ]);
    expect(problemsOf({ NATS_URL: 'nats://n:4222', NATS_CREDS: file('bad.nk', 'hello') })).toEqual([
      `NATS_CREDS must name a .creds file (user JWT and seed) or a user nkey seed (SU…), got "${join(dir, 'bad.nk')}"`,
    ]);
    expect(problemsOf({ NATS_CREDS: seed })).toEqual(['NATS_CREDS needs NATS_URL']);
  });

  it('D34: DATABASE_URL selects PostgreSQL; without it, PGlite under GPUX_DATA_DIR', () => {
    expect(loadConfig({})).toMatchObject({ databaseUrl: undefined, dataDir: '.gpux' });
    expect(
      loadConfig({
        DATABASE_URL: 'postgres://u@db:5432/gpux',
        GPUX_DATA_DIR: '/var/lib/gpux',
        NATS_URL: 'nats://nats:4222',
      }),
    ).toMatchObject({ databaseUrl: 'postgres://u@db:5432/gpux', dataDir: '/var/lib/gpux' });
    expect(() => loadConfig({ DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL/);
  });

  it('D18: rate limits come from configuration', () => {
    expect(loadConfig({}).rateLimits).toEqual({ query: 100, create: 10, cancel: 20 });
    expect(
      loadConfig({
        GPUX_RATE_QUERIES_PER_MINUTE: '5000',
        GPUX_RATE_ORDERS_PER_MINUTE: '1000',
        GPUX_RATE_CANCELS_PER_MINUTE: '200',
      }).rateLimits,
    ).toEqual({ query: 5000, create: 1000, cancel: 200 });
    expect(() => loadConfig({ GPUX_RATE_ORDERS_PER_MINUTE: '0' })).toThrow(/GPUX_RATE_ORDERS/);
  });

  it("each provider's share of the agents' service comes from configuration, apart from D18's", () => {
    expect(loadConfig({}).agentShare).toEqual({
      heartbeatsPerInterval: 2,
      readsPerMinute: 240,
      sellsPerMinute: 30,
      reportsPerMinute: 30,
      callsInFlight: 8,
    });
    expect(
      loadConfig({
        GPUX_AGENT_HEARTBEATS_PER_INTERVAL: '3',
        GPUX_AGENT_READS_PER_MINUTE: '600',
        GPUX_AGENT_SELLS_PER_MINUTE: '60',
        GPUX_AGENT_REPORTS_PER_MINUTE: '90',
        GPUX_AGENT_CALLS_IN_FLIGHT: '16',
      }).agentShare,
    ).toEqual({
      heartbeatsPerInterval: 3,
      readsPerMinute: 600,
      sellsPerMinute: 60,
      reportsPerMinute: 90,
      callsInFlight: 16,
    });
    expect(() => loadConfig({ GPUX_AGENT_CALLS_IN_FLIGHT: '0' })).toThrow(
      /GPUX_AGENT_CALLS_IN_FLIGHT/,
    );
    expect(loadConfig({}).agentDbConnections).toBe(4);
    expect(loadConfig({ GPUX_AGENT_DB_CONNECTIONS: '2' }).agentDbConnections).toBe(2);
    expect(() => loadConfig({ GPUX_AGENT_DB_CONNECTIONS: '101' })).toThrow(
      /GPUX_AGENT_DB_CONNECTIONS/,
    );
  });

  it('D34: GPUX_DEMO turns demo data on for PostgreSQL', () => {
    expect(loadConfig({}).demo).toBe(false);
    expect(loadConfig({ GPUX_DEMO: '1' }).demo).toBe(true);
    expect(loadConfig({ GPUX_DEMO: 'false' }).demo).toBe(false);
    expect(() => loadConfig({ GPUX_DEMO: 'yes please' })).toThrow(/GPUX_DEMO/);
  });

  it('D34: GPUX_ADMIN_TOKEN is read, and refused when short', () => {
    expect(loadConfig({}).adminToken).toBeUndefined();
    expect(loadConfig({ GPUX_ADMIN_TOKEN: 'a-long-enough-admin-token' }).adminToken).toBe(
      'a-long-enough-admin-token',
    );
    expect(() => loadConfig({ GPUX_ADMIN_TOKEN: 'short' })).toThrow(/GPUX_ADMIN_TOKEN/);
  });

  it('D34: GPUX_DRAIN_TIMEOUT_SECONDS bounds the SIGTERM drain, 10 s by default', () => {
    expect(loadConfig({}).drainTimeoutMs).toBe(10_000);
    expect(loadConfig({ GPUX_DRAIN_TIMEOUT_SECONDS: '30' }).drainTimeoutMs).toBe(30_000);
    expect(loadConfig({ GPUX_DRAIN_TIMEOUT_SECONDS: '0' }).drainTimeoutMs).toBe(0);
    for (const bad of ['-1', '1.5', 'soon', '3601']) {
      expect(() => loadConfig({ GPUX_DRAIN_TIMEOUT_SECONDS: bad })).toThrow(
        /GPUX_DRAIN_TIMEOUT_SECONDS/,
      );
    }
  });

  it('reports every problem at once', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: '70000', LOG_LEVEL: 'loud', DATABASE_URL: 'nope' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const { problems } = error as ConfigError;
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/^PORT /);
    expect(problems[1]).toMatch(/^LOG_LEVEL /);
    expect(problems[2]).toMatch(/^DATABASE_URL /);
  });

  it.each(['-1', '8080x', '1.5', '123456'])('rejects PORT=%s', (PORT) => {
    expect(() => loadConfig({ PORT })).toThrow(ConfigError);
  });
});
