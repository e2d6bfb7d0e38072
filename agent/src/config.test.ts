import { describe, expect, it } from 'vitest';

import { ConfigError, compileAgentConfig, parseHostPort } from './config.js';
import { loadAgentConfig } from './env-settings.js';
import type { ConfigIo } from './config.js';

const CLUSTER = 'cls_01jdq3m5x0aaaaaaaaaaaaaaaa';

const GOOD = {
  EXCHANGE_GRPC_URL: '127.0.0.1:50051',
  GPUX_TOKEN: 'gpux_0123456789abcdef',
  GPUX_CLUSTER_ID: CLUSTER,
  NATS_URL: 'nats://127.0.0.1:4222',
  PROVISIONER: 'simulated',
};

const SEED = `SU${'A'.repeat(56)}`;
const files: Record<string, string> = {
  '/ca.pem': 'CA',
  '/cert.pem': 'CERT',
  '/key.pem': 'KEY',
  '/agent.nk': `${SEED}\n`,
  '/garbage': 'hello',
};
const io: ConfigIo = {
  readFile: (p) => {
    const f = files[p];
    if (f === undefined) throw Object.assign(new Error('no such file'), { code: 'ENOENT' });
    return Buffer.from(f);
  },
  hostname: () => 'gpu-host-1',
};

function problemsOf(env: Record<string, string>, args: string[] = []): readonly string[] {
  try {
    loadAgentConfig(env, args, { io });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('agent settings', () => {
  it('compiles the defaults, with units in the names', () => {
    const c = loadAgentConfig(GOOD, [], { io });
    expect(c).toMatchObject({
      exchangeTarget: '127.0.0.1:50051',
      exchangeTls: undefined,
      clusterId: CLUSTER,
      natsUrl: 'nats://127.0.0.1:4222',
      provisioner: 'simulated',
      sshListen: { host: '127.0.0.1', port: 2222 },
      sshAdvertiseHost: '127.0.0.1',
      askCents: undefined,
      listHours: 168,
      heartbeatIntervalMs: 5_000,
      drainTimeoutMs: 30_000,
      stateDir: '.gpux/agent',
      simulatedAllowRemote: false,
      simulatedProvisionDelayMs: 0,
    });
  });

  it('the drain deadline is whole seconds from 0 to 3600', () => {
    expect(loadAgentConfig(GOOD, ['--drain-timeout-seconds', '5'], { io }).drainTimeoutMs).toBe(
      5_000,
    );
    expect(loadAgentConfig({ ...GOOD, GPUX_DRAIN_TIMEOUT_SECONDS: '0' }, [], { io })).toMatchObject(
      { drainTimeoutMs: 0 },
    );
    expect(problemsOf({ ...GOOD, GPUX_DRAIN_TIMEOUT_SECONDS: '3601' })).toEqual([
      'GPUX_DRAIN_TIMEOUT_SECONDS must be a whole number from 0 to 3600, got "3601"',
    ]);
    expect(problemsOf({ ...GOOD, GPUX_DRAIN_TIMEOUT_SECONDS: 'forever' })).toEqual([
      'GPUX_DRAIN_TIMEOUT_SECONDS must be a whole number from 0 to 3600, got "forever"',
    ]);
  });

  it('PROVISIONER defaults to kubernetes, which needs its public server and webhook certificate', () => {
    const { PROVISIONER: _, ...env } = GOOD;
    expect(problemsOf(env)).toEqual([
      "GPUX_KUBE_PUBLIC_SERVER is required with PROVISIONER=kubernetes (https://host:port of the cluster's API server as customers reach it)",
      'GPUX_WEBHOOK_CERT_FILE and GPUX_WEBHOOK_KEY_FILE are required with PROVISIONER=kubernetes (the admission webhook is served over HTTPS)',
    ]);
    const c = loadAgentConfig(
      {
        ...env,
        GPUX_KUBE_PUBLIC_SERVER: 'https://k8s.example.com:6443/',
        GPUX_WEBHOOK_CERT_FILE: '/cert.pem',
        GPUX_WEBHOOK_KEY_FILE: '/key.pem',
        KUBECONFIG: '/kubeconfig',
      },
      [],
      { io },
    );
    expect(c.provisioner).toBe('kubernetes');
    expect(c.kubernetes).toEqual({
      kubeconfigPath: '/kubeconfig',
      publicServer: 'https://k8s.example.com:6443',
      workspaceImage: 'nvidia/cuda:12.4.1-base-ubuntu22.04',
      workspaceCommand: 'sleep infinity',
      webhookListen: { host: '0.0.0.0', port: 8443 },
      webhookCertPem: Buffer.from('CERT'),
      webhookKeyPem: Buffer.from('KEY'),
      webhookCertFile: '/cert.pem',
      webhookKeyFile: '/key.pem',
    });
    expect(
      problemsOf({
        ...env,
        GPUX_KUBE_PUBLIC_SERVER: 'http://k8s:6443',
        GPUX_WEBHOOK_CERT_FILE: '/cert.pem',
        GPUX_WEBHOOK_KEY_FILE: '/nope.pem',
        GPUX_WEBHOOK_LISTEN: 'all',
      }),
    ).toEqual([
      'GPUX_KUBE_PUBLIC_SERVER must be an https:// URL, got "http://k8s:6443"',
      'GPUX_WEBHOOK_LISTEN must be host:port, got "all"',
      'GPUX_WEBHOOK_KEY_FILE: cannot read /nope.pem (ENOENT)',
    ]);
  });

  it('reports every problem at once, one line each', () => {
    const problems = problemsOf({
      GPUX_TOKEN: 'short',
      GPUX_CLUSTER_ID: 'cluster-1',
      PROVISIONER: 'docker',
      GPUX_SSH_LISTEN: 'nowhere',
      GPUX_ASK_PRICE: '2.505',
      GPUX_LIST_HOURS: '1',
      GPUX_HEARTBEAT_SECONDS: 'soon',
      GPUX_SIMULATED_PROVISION_DELAY_MS: '-5',
      NATS_URL: 'http://x',
    });
    // In the table's order (settings.ts, what --help lists); a secret (the
    // token, a URL that may hold a password) is never repeated.
    expect(problems).toEqual([
      'EXCHANGE_GRPC_URL is required (host:port of the exchange)',
      'GPUX_TOKEN must be 16 to 512 printable characters, no spaces',
      'GPUX_CLUSTER_ID must be a cluster id (cls_…), got "cluster-1"',
      'NATS_URL must be nats://[user:password@]host[:port] or tls://…',
      'PROVISIONER must be simulated or kubernetes, got "docker"',
      'GPUX_SSH_LISTEN must be host:port, got "nowhere"',
      'GPUX_ASK_PRICE must be whole cents (at most 2 decimals), got "2.505"',
      'GPUX_LIST_HOURS must be a whole number from 2 to 720, got "1"',
      'GPUX_HEARTBEAT_SECONDS must be a whole number from 1 to 300, got "soon"',
      'GPUX_SIMULATED_PROVISION_DELAY_MS must be a whole number from 0 to 600000, got "-5"',
    ]);
    for (const p of problems) expect(p).not.toContain('\n');
  });

  it('NATS_URL is required, unless the in-process bus is injected (gpux start, D34)', () => {
    const { NATS_URL: _, ...env } = GOOD;
    expect(problemsOf(env)).toEqual([
      "NATS_URL is required: the exchange's in-process bus is reachable only from `gpux start`",
    ]);
    expect(loadAgentConfig(env, [], { io, inProcessBus: true }).natsUrl).toBeUndefined();
  });

  it('flags mirror the settings and win over the environment', () => {
    const c = loadAgentConfig(
      { ...GOOD, GPUX_LIST_HOURS: '24' },
      ['--list-hours', '48', '--ask-price=2.50', '--heartbeat-seconds', '2'],
      { io },
    );
    expect(c.listHours).toBe(48);
    expect(c.askCents).toBe(250);
    expect(c.heartbeatIntervalMs).toBe(2_000);
  });

  it('an unknown flag or a flag without its value is a problem', () => {
    expect(problemsOf(GOOD, ['--frobnicate', '1', '--state-dir'])).toEqual([
      'unknown argument "--frobnicate" (see --help)',
      'unknown argument "1" (see --help)',
      '--state-dir needs a value',
    ]);
  });

  it('the simulated provisioner refuses a non-loopback SSH listener unless allowed', () => {
    expect(problemsOf({ ...GOOD, GPUX_SSH_LISTEN: '0.0.0.0:2222' })).toEqual([
      "GPUX_SSH_LISTEN is 0.0.0.0, not loopback: the simulated provisioner's shells run as the agent's user, who can read its token; set GPUX_SIMULATED_ALLOW_REMOTE=1 to allow it",
    ]);
    const c = loadAgentConfig(
      { ...GOOD, GPUX_SSH_LISTEN: '0.0.0.0:2222', GPUX_SIMULATED_ALLOW_REMOTE: '1' },
      [],
      { io },
    );
    // A wildcard listener is advertised under the host's name.
    expect(c.sshAdvertiseHost).toBe('gpu-host-1');
    expect(loadAgentConfig({ ...GOOD, GPUX_SSH_LISTEN: '[::1]:0' }, [], { io }).sshListen).toEqual({
      host: '::1',
      port: 0,
    });
  });

  it('TLS: https:// or a CA file; a client certificate needs its key and TLS', () => {
    const tls = loadAgentConfig(
      {
        ...GOOD,
        EXCHANGE_GRPC_URL: 'https://exchange.example:443',
        GPUX_GRPC_CERT_FILE: '/cert.pem',
        GPUX_GRPC_KEY_FILE: '/key.pem',
      },
      [],
      { io },
    );
    expect(tls.exchangeTarget).toBe('exchange.example:443');
    expect(tls.exchangeTls?.certPem?.toString()).toBe('CERT');
    expect(tls.exchangeTls?.caPem).toBeUndefined();
    // Where they are, to be read again when they change (tls-files.ts).
    expect(tls.exchangeTls?.files).toEqual({ ca: undefined, cert: '/cert.pem', key: '/key.pem' });
    expect(
      loadAgentConfig({ ...GOOD, GPUX_GRPC_CA_FILE: '/ca.pem' }, [], {
        io,
      }).exchangeTls?.caPem?.toString(),
    ).toBe('CA');
    expect(problemsOf({ ...GOOD, GPUX_GRPC_CERT_FILE: '/cert.pem' })).toEqual([
      'GPUX_GRPC_CERT_FILE and GPUX_GRPC_KEY_FILE go together: set both or neither',
    ]);
    expect(
      problemsOf({ ...GOOD, GPUX_GRPC_CERT_FILE: '/cert.pem', GPUX_GRPC_KEY_FILE: '/key.pem' }),
    ).toEqual([
      'GPUX_GRPC_CERT_FILE needs TLS: use an https:// EXCHANGE_GRPC_URL or set GPUX_GRPC_CA_FILE',
    ]);
    expect(problemsOf({ ...GOOD, GPUX_GRPC_CA_FILE: '/missing.pem', NATS_CREDS: '/nope' })).toEqual(
      [
        'NATS_CREDS: cannot read /nope (ENOENT)',
        'GPUX_GRPC_CA_FILE: cannot read /missing.pem (ENOENT)',
      ],
    );
  });

  it('NATS_CREDS holds an nkey seed (deploy/nats/) or a .creds file; anything else is a problem', () => {
    const c = loadAgentConfig({ ...GOOD, NATS_CREDS: '/agent.nk' }, [], { io });
    expect(c.natsCreds?.kind).toBe('nkey');
    expect(problemsOf({ ...GOOD, NATS_CREDS: '/garbage' })).toEqual([
      'NATS_CREDS /garbage: NATS credentials must be a .creds file (user JWT and seed) or a user nkey seed (SU…)',
    ]);
  });

  it('the ask is exact cents (D1) and positive', () => {
    expect(loadAgentConfig({ ...GOOD, GPUX_ASK_PRICE: '2.5' }, [], { io }).askCents).toBe(250);
    expect(problemsOf({ ...GOOD, GPUX_ASK_PRICE: '0' })).toEqual([
      'GPUX_ASK_PRICE must be greater than 0, got "0"',
    ]);
  });

  it('options from code compile the same way', () => {
    const c = compileAgentConfig(
      {
        exchangeGrpcUrl: '127.0.0.1:50051',
        token: GOOD.GPUX_TOKEN,
        clusterId: CLUSTER,
        provisioner: 'simulated',
        heartbeatSeconds: 1,
      },
      { inProcessBus: true, io },
    );
    expect(c.heartbeatIntervalMs).toBe(1_000);
    expect(c.reconcileIntervalMs).toBe(2_000);
  });

  it('parses host:port forms', () => {
    expect(parseHostPort('a.b:22')).toEqual({ host: 'a.b', port: 22 });
    expect(parseHostPort('[::]:22')).toEqual({ host: '::', port: 22 });
    expect(parseHostPort('a.b:70000')).toBeUndefined();
    expect(parseHostPort('a.b')).toBeUndefined();
  });
});
