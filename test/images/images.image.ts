// The OCI images (issue 19, deploy/images/) on a real container runtime:
// what each image declares (`podman image inspect`) is what
// deploy/agent/base/ and deploy/exchange/ assume, and both run the market
// end to end: the exchange's image on a fresh PostgreSQL database and this
// machine's NATS, the agent's image (simulated provisioner) attached to it,
// a buyer's lease reached with the real OpenSSH client pinned to the host
// key the agent container reported, the agent container restarted on its
// state volume (same host key, lease kept: D30), termination removing
// access; the exchange's image serves the built console at /console/.
// Both containers run as uid 65532 with a read-only root file system. Run by `npm run test:images` (test/images/run.ts), which builds
// the images first; not part of `npm test`.

import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { SFTP_SERVER } from '../../agent/src/provisioner/kubernetes/pod-exec-backend.js';
import { HOST_KEY_FILE } from '../../agent/src/ssh/host-key.js';
import { EXCHANGE_NODE_FLAGS } from '@gpux/exchange';

import { PODMAN_GLOBAL, PODMAN_ULIMITS, podmanLauncher } from '../support/launch.js';
import { ProviderStack } from '../support/provider-stack.js';
import { leaseTarget, makeSshKey, runSsh } from '../support/ssh-client.js';
import type { SshKey, SshTarget } from '../support/ssh-client.js';

const AGENT_IMAGE = process.env['GPUX_TEST_AGENT_IMAGE'] ?? '';
const EXCHANGE_IMAGE = process.env['GPUX_TEST_EXCHANGE_IMAGE'] ?? '';
const WORKSPACE_IMAGE = process.env['GPUX_TEST_WORKSPACE_IMAGE'] ?? '';
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const VERSION = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
).version;

/** The agent's state volume (as deploy/agent mounts it) and the exchange's data directory. */
const AGENT_STATE = '/var/lib/gpux-agent';
const EXCHANGE_DATA = '/var/lib/gpux-exchange';

function podman(...args: string[]): string {
  return execFileSync('podman', [...PODMAN_GLOBAL, ...args], { encoding: 'utf8' });
}

interface ImageConfig {
  readonly User: string;
  readonly WorkingDir: string;
  readonly Entrypoint: readonly string[];
  readonly Cmd: readonly string[] | null;
  readonly Env: readonly string[];
  readonly ExposedPorts: Record<string, unknown>;
  readonly Volumes: Record<string, unknown>;
  readonly Labels: Record<string, string>;
}

function inspect(image: string): ImageConfig {
  const [i] = JSON.parse(podman('image', 'inspect', image)) as [{ Config: ImageConfig }];
  return i.Config;
}

function envOf(c: ImageConfig): Record<string, string> {
  return Object.fromEntries(
    c.Env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
  );
}

interface Container {
  name: string;
  image: string;
  ports?: { name: string; containerPort: number; protocol: string }[];
  securityContext: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean };
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  securityContext: {
    runAsUser: number;
    runAsGroup: number;
    fsGroup: number;
    runAsNonRoot: boolean;
  };
  containers: Container[];
  volumes: { name: string; persistentVolumeClaim?: { claimName: string } }[];
}

function settingsEnv(file: string): Record<string, string> {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  return Object.fromEntries(
    lines
      .filter((l) => /^[A-Z_]+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

describe('what the images declare is what deploy/ assumes', () => {
  it('the agent image: deploy/agent/base/deployment.yaml and settings.env', () => {
    const image = inspect(AGENT_IMAGE);
    const deployment = yaml.load(
      readFileSync(join(ROOT, 'deploy/agent/base/deployment.yaml'), 'utf8'),
    ) as { spec: { template: { spec: PodSpec } } };
    const pod = deployment.spec.template.spec;
    const agent = pod.containers.find((c) => c.name === 'agent');
    if (agent === undefined) throw new Error('no container "agent" in the Deployment');
    const settings = settingsEnv('deploy/agent/base/settings.env');

    // The user the pod runs as is the image's, and not root.
    expect(image.User).toBe(`${pod.securityContext.runAsUser}:${pod.securityContext.runAsGroup}`);
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.securityContext.runAsUser).not.toBe(0);
    expect(agent.securityContext.readOnlyRootFilesystem).toBe(true);
    // The state volume: declared by the image, mounted there from the PVC,
    // and where GPUX_STATE_DIR points in the image and in settings.env.
    const state = pod.volumes.find((v) => v.persistentVolumeClaim !== undefined);
    const stateMount = agent.volumeMounts.find((m) => m.name === state?.name);
    expect(stateMount?.mountPath).toBe(AGENT_STATE);
    expect(Object.keys(image.Volumes)).toEqual([AGENT_STATE]);
    expect(envOf(image)['GPUX_STATE_DIR']).toBe(AGENT_STATE);
    expect(settings['GPUX_STATE_DIR']).toBe(AGENT_STATE);
    // Ports: the image's, the container's and the listen addresses agree.
    const ports = (agent.ports ?? []).map((p) => `${p.containerPort}/${p.protocol.toLowerCase()}`);
    expect(Object.keys(image.ExposedPorts).sort()).toEqual(ports.sort());
    const port = (hostPort: string | undefined): string => `${hostPort?.split(':').pop()}/tcp`;
    expect(ports).toContain(port(settings['GPUX_SSH_LISTEN']));
    expect(ports).toContain(port(settings['GPUX_WEBHOOK_LISTEN']));
    expect(ports).toContain(port(settings['GPUX_METRICS_LISTEN']));
    expect(port(envOf(image)['GPUX_SSH_LISTEN'])).toBe(port(settings['GPUX_SSH_LISTEN']));
    // What runs: tini (SIGTERM drains, orphans reaped), then `gpux agent`.
    expect(image.WorkingDir).toBe('/opt/gpux');
    expect(image.Entrypoint).toEqual([
      '/usr/local/bin/tini',
      '--',
      'node',
      '/opt/gpux/agent/dist/main.js',
    ]);
    expect(agent.image).toBe('gpux-agent');
    // The labels name this build.
    expect(image.Labels['org.opencontainers.image.version']).toBe(VERSION);
    expect(image.Labels['org.opencontainers.image.source']).toMatch(/^https:\/\//);
    expect(image.Labels['org.opencontainers.image.revision']).toMatch(/^[0-9a-f]{40}(-dirty)?$/);
  });

  it('the exchange image: non-root, its data volume, ports, and the node flags of the systemd unit', () => {
    const image = inspect(EXCHANGE_IMAGE);
    expect(image.User).toBe('65532:65532');
    expect(Object.keys(image.Volumes)).toEqual([EXCHANGE_DATA]);
    const env = envOf(image);
    expect(env['GPUX_DATA_DIR']).toBe(EXCHANGE_DATA);
    expect(env['HOST']).toBe('0.0.0.0');
    expect(Object.keys(image.ExposedPorts).sort()).toEqual(
      [`${env['PORT']}/tcp`, `${env['GRPC_PORT']}/tcp`].sort(),
    );
    expect(image.Entrypoint).toEqual([
      '/usr/local/bin/tini',
      '--',
      'node',
      ...EXCHANGE_NODE_FLAGS,
      '/opt/gpux/cli/bin/gpux.js',
    ]);
    expect(image.Cmd).toEqual(['exchange']);
    expect(image.Labels['org.opencontainers.image.version']).toBe(VERSION);
    expect(image.Labels['org.opencontainers.image.revision']).toMatch(/^[0-9a-f]{40}(-dirty)?$/);
  });
});

describe('the example workspace image (deploy/images/workspace.Containerfile)', () => {
  it("has the sftp-server the agent's Kubernetes provisioner execs for sftp and scp", () => {
    // The very command the agent runs in the workspace pod; with no input,
    // sftp-server ends at once with 0, and the lookup says 127 when it finds none.
    const r = spawnSync('podman', [
      ...PODMAN_GLOBAL,
      'run',
      '--rm',
      '--network',
      'none',
      ...PODMAN_ULIMITS,
      WORKSPACE_IMAGE,
      'sh',
      '-c',
      SFTP_SERVER,
    ]);
    expect(r.stderr.toString()).toBe('');
    expect(r.status).toBe(0);
  });
});

describe('the images end to end: podman, host network, read-only root, the real OpenSSH client', () => {
  const tag = randomBytes(4).toString('hex');
  const exchangeName = `gpux-e2e-exchange-${tag}`;
  const agentName = `gpux-e2e-agent-${tag}`;
  const volume = `gpux-e2e-agent-state-${tag}`;
  let stack: ProviderStack;
  let key: SshKey;
  let leaseId = '';
  let target: SshTarget;
  let hostKeys: string[] = [];

  beforeAll(async () => {
    podman('volume', 'create', volume);
    stack = await ProviderStack.start({
      label: 'gpux_images',
      nodes: ['gpu-a', 'gpu-b'],
      launch: {
        exchange: podmanLauncher({
          image: EXCHANGE_IMAGE,
          name: exchangeName,
          drop: ['GPUX_DATA_DIR'],
        }),
        agent: podmanLauncher({
          image: AGENT_IMAGE,
          name: agentName,
          volumes: [[volume, AGENT_STATE]],
          drop: ['GPUX_STATE_DIR'],
          set: { HOME: AGENT_STATE },
        }),
      },
    });
    key = makeSshKey(stack.dir, 'buyer');
  }, 180_000);

  afterAll(async () => {
    await stack?.close();
    for (const name of [agentName, exchangeName]) {
      spawnSync('podman', [...PODMAN_GLOBAL, 'rm', '--force', '--ignore', name], {
        stdio: 'ignore',
      });
    }
    spawnSync('podman', [...PODMAN_GLOBAL, 'volume', 'rm', '--force', volume], { stdio: 'ignore' });
  });

  it('both run as uid 65532 with a read-only root; only the state volume is writable', () => {
    for (const name of [agentName, exchangeName]) {
      expect(podman('exec', name, 'id', '-u').trim()).toBe('65532');
      const write = spawnSync('podman', [
        ...PODMAN_GLOBAL,
        'exec',
        name,
        'sh',
        '-c',
        'touch /opt/gpux/probe',
      ]);
      expect(write.status).not.toBe(0);
      expect(write.stderr.toString()).toMatch(/read-only file system/i);
    }
    // The agent's SSH host key lives on the volume, written by uid 65532.
    expect(podman('exec', agentName, 'stat', '-c', '%u', AGENT_STATE).trim()).toBe('65532');
    expect(
      podman(
        'exec',
        agentName,
        'stat',
        '-c',
        '%u %a',
        `${AGENT_STATE}/ssh/${HOST_KEY_FILE}`,
      ).trim(),
    ).toBe('65532 600');
  });

  it("the exchange image serves the operators' console at /console/ (built into it)", async () => {
    // Without the Vite build in the image, /console/ answers 503 (docs/console.md).
    const page = await fetch(`${stack.url}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain('<title>gpux console</title>');
    const script = /<script type="module"[^>]* src="(\/console\/assets\/[\w.-]+\.js)"/.exec(html);
    expect(script?.[1]).toBeDefined();
    const js = await fetch(`${stack.url}${script?.[1] ?? ''}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
  });

  it('attach, a buy, the lease active; ssh pinned to the reported host key runs a command', async () => {
    const registered = await stack.call('POST', '/v1/ssh_keys', stack.buyer.token, {
      name: 'laptop',
      public_key: key.publicKey,
    });
    expect(registered.status).toBe(201);
    await stack.waitForAsks(16, 60_000);
    const order = await stack.buyNode(stack.buyer.token, 2);
    expect(order).toMatchObject({ status: 'filled', order_type: 'market' });
    leaseId = order['lease_id'] as string;
    const lease = await stack.waitForLease(leaseId, stack.buyer.token, 'active', 60_000);
    hostKeys = lease['ssh_host_keys'] as string[];
    expect(hostKeys.length).toBeGreaterThan(0);
    target = leaseTarget(lease, key, join(stack.dir, 'known_hosts'));
    const r = await runSsh(target, 'echo "in $GPUX_LEASE_ID as $(id -u)"');
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`in ${leaseId} as 65532\n`);
  });

  it('the agent container restarted on its volume: the same host key, the lease kept (D30)', async () => {
    expect(await stack.stopAgent('SIGTERM')).toBe(0); // drained (D34), through tini
    await stack.startAgent();
    const lease = await stack.waitForLease(leaseId);
    expect(lease['ssh_host_keys']).toEqual(hostKeys);
    // The known_hosts written before the restart still verifies it.
    const r = await runSsh(target, 'echo after');
    expect(r.stdout).toBe('after\n');
    expect(r.code).toBe(0);
  });

  it('termination removes access', async () => {
    await stack.terminate(leaseId);
    await stack.waitFor(
      'ssh refused',
      async () => (await runSsh(target, 'echo still')).code !== 0,
      60_000,
      200,
    );
    const r = await runSsh(target, 'echo still');
    expect(r.stdout).toBe('');
  });
});
