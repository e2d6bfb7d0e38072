// The provider path end to end (issue 12), every part its own process: the
// built exchange on a fresh PostgreSQL database publishing to JetStream, the
// built agent (simulated provisioner) attached over gRPC, and the real
// OpenSSH client. A buyer registers a key (D32) and buys 8 GPUs at market;
// the lease becomes active with the endpoint and host key the agent
// reported; ssh, pinned to that key, runs a command and a terminal under
// tmux that follows resizes; the kubeconfig downloads (D28); terminating
// the lease (D26) closes the open sessions, refuses new logins, removes the
// kubeconfig and credits the refund in the ledger.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ProviderStack } from './support/provider-stack.js';
import {
  leaseTarget,
  makeSshKey,
  openSession,
  runSsh,
  sshOptions,
  writeKnownHosts,
} from './support/ssh-client.js';
import type { SshKey, SshTarget } from './support/ssh-client.js';
import { inTmux } from './support/tmux.js';

const ASK = 2.5;
const HOURS = 2;

let stack: ProviderStack;
let key: SshKey;
let leaseId = '';
let namespace = '';
let target: SshTarget;

beforeAll(async () => {
  stack = await ProviderStack.start({ nodes: ['gpu-a', 'gpu-b'], askPrice: ASK.toFixed(2) });
  key = makeSshKey(stack.dir, 'buyer');
});

afterAll(async () => {
  await stack?.close();
});

describe('the provider path across processes: exchange, agent, OpenSSH', () => {
  it('a buyer registers a key, buys 8 GPUs at market; the lease becomes active with its access', async () => {
    const registered = await stack.call('POST', '/v1/ssh_keys', stack.buyer.token, {
      name: 'laptop',
      public_key: key.publicKey,
    });
    expect(registered.status).toBe(201);

    // The agent lists each free node at its ask (one sell per node).
    await stack.waitForAsks(16);
    const order = await stack.buyNode(stack.buyer.token, HOURS);
    expect(order).toMatchObject({ status: 'filled', order_type: 'market', matched_price: ASK });
    leaseId = order['lease_id'] as string;

    const lease = await stack.waitForLease(leaseId);
    expect(lease).toMatchObject({
      status: 'active',
      cluster_id: stack.clusterId,
      gpu_count: 8,
    });
    // The namespace the kubeconfig must name (D28), in Kubernetes' DNS-1123 form.
    namespace = lease['namespace'] as string;
    expect(namespace).toBe(`gpux-${leaseId.replace('_', '-')}`);
    const endpoints = lease['ssh_endpoints'] as string[];
    const hostKeys = lease['ssh_host_keys'] as string[];
    expect(endpoints).toHaveLength(1);
    expect(hostKeys).toEqual([expect.stringMatching(/^ssh-ed25519 AAAA\S+$/) as string]);
    // known_hosts holds only the key the lease read reported (D32 pinning).
    target = leaseTarget(lease, key, join(stack.dir, 'known_hosts'));
    expect(target.endpoint).toMatchObject({ host: '127.0.0.1', port: stack.agent?.sshPort });
    // Issue 24: the read's own known_hosts lines pin the endpoint as they are.
    const [access] = lease['ssh_access'] as {
      user: string;
      host: string;
      port: number;
      known_hosts: string[];
    }[];
    expect(access).toMatchObject({ ...target.endpoint, host_keys: hostKeys });
    const apiKnownHosts = join(stack.dir, 'known_hosts_from_api');
    writeFileSync(apiKnownHosts, `${(access?.known_hosts ?? []).join('\n')}\n`);
    target = { ...target, knownHosts: apiKnownHosts };
    const r = await runSsh(target, 'echo ok');
    expect(r, stack.agent?.output()).toEqual({ code: 0, stdout: 'ok\n', stderr: '' });
  });

  it('refuses a host key other than the reported one (StrictHostKeyChecking=yes)', async () => {
    const other = makeSshKey(stack.dir, 'not-the-host');
    const wrong = writeKnownHosts(join(stack.dir, 'known_hosts_wrong'), target.endpoint, [
      other.publicKey,
    ]);
    const r = await runSsh({ ...target, knownHosts: wrong }, 'echo ok');
    expect(r.code).toBe(255);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/host key/i);
  });

  it('a terminal on a pty under tmux follows window-change', async () => {
    const { endpoint, knownHosts } = target;
    const login = [
      'ssh',
      ...sshOptions(key, knownHosts, endpoint.port),
      `${endpoint.user}@${endpoint.host}`,
    ];
    const waitFor = (what: string, holds: () => boolean): Promise<boolean> =>
      stack.waitFor(what, holds);
    const size = { columns: 100, rows: 30 };
    await inTmux(`gpux-path-${process.pid}`, login, size, waitFor, async (t) => {
      await t.typed('echo "size=$(stty size) lease=$GPUX_LEASE_ID"', /size=30 100 lease=lse_\S+/);
      expect(t.pane()).toContain(`lease=${leaseId}`);
      t.resize(120, 40);
      await t.typed('echo "resized=$(stty size)"', /resized=40 120/);
      await t.exit();
    });
  });

  it('the kubeconfig downloads as YAML (D28)', async () => {
    const k = await stack.call('GET', `/v1/leases/${leaseId}/kubeconfig`, stack.buyer.token);
    expect(k.status).toBe(200);
    expect(k.contentType).toMatch(/^application\/yaml/);
    expect(k.text).toMatch(/^apiVersion: v1$/m);
    expect(k.text).toMatch(/^kind: Config$/m);
    expect(k.text).toMatch(new RegExp(`^\\s+namespace: ${namespace}$`, 'm'));
  });

  it('terminate (D26): open sessions closed, new logins refused, kubeconfig 404, refund in the ledger', async () => {
    const exec = await openSession(target);
    const pty = await openSession(target, 'pty-open', 'echo pty-open; exec sleep 600', ['-tt']);
    const before = await stack.balance();

    const t0 = performance.now();
    const { rate, refund } = await stack.terminate(leaseId);
    const answeredMs = performance.now() - t0;
    expect(rate).toBe(ASK);
    expect(refund).toBeGreaterThan(0);

    // Both sessions end with the gateway's message (issue 12: message, kill, close).
    const [closedExec, closedPty] = await Promise.all([exec.ended, pty.ended]);
    const closedMs = performance.now() - t0;
    for (const closed of [closedExec, closedPty]) {
      expect(closed.code).toBe(255);
      expect(closed.stderr).toContain(`gpux: lease ${leaseId} terminated`);
    }
    // Refused from now on: the agent handled the revoke before it closed them.
    const again = await runSsh(target, 'echo ok');
    expect(again.code).toBe(255);
    expect(again.stdout).toBe('');
    expect(again.stderr).toMatch(/Permission denied/);
    const refusedMs = performance.now() - t0;

    const kube = await stack.call('GET', `/v1/leases/${leaseId}/kubeconfig`, stack.buyer.token);
    expect(kube.status).toBe(404);
    const lease = await stack.ok('GET', `/v1/leases/${leaseId}`, stack.buyer.token);
    expect(lease).toMatchObject({
      status: 'terminated',
      end_reason: 'terminated',
      ssh_endpoints: [],
      ssh_host_keys: [],
    });

    // The refund is a ledger row of the lease, and the balance moved by it.
    const rows = await stack.transactions();
    expect(rows.filter((r) => r.lease_id === leaseId && r.kind === 'refund')).toEqual([
      expect.objectContaining({ amount: refund }),
    ]);
    const charged = rows
      .filter(
        (r) => r.lease_id === leaseId && (r.kind === 'buyer_charge' || r.kind === 'buyer_fee'),
      )
      .reduce((sum, r) => sum + r.amount, 0);
    expect(charged).toBeCloseTo(-(ASK * 8 * HOURS * 1.1), 2);
    const after = await stack.balance();
    expect(after).toBeCloseTo(before + refund, 2);

    console.log(
      `provider path: DELETE answered in ${answeredMs.toFixed(0)} ms; open sessions closed ${closedMs.toFixed(0)} ms and a new login refused ${refusedMs.toFixed(0)} ms after it`,
    );
  });
});

describe('an agent restarted on the same state directory (D30)', () => {
  it('keeps a live lease: same endpoint, same host key, the login still works', async () => {
    await stack.waitForAsks(8);
    const order = await stack.buyNode(stack.buyer.token, HOURS);
    const id = order['lease_id'] as string;
    const before = await stack.waitForLease(id);
    const live = leaseTarget(before, key, join(stack.dir, 'known_hosts_restart'));
    expect((await runSsh(live, 'echo before')).stdout).toBe('before\n');

    // D34: SIGTERM drains and exits 0; the lease is not torn down.
    expect(await stack.stopAgent('SIGTERM')).toBe(0);
    await stack.startAgent();
    // Reconciliation at start finds the workspace and the active lease (D30).
    const after = await stack.ok('GET', `/v1/leases/${id}`, stack.buyer.token);
    expect(after).toMatchObject({
      status: 'active',
      ssh_endpoints: before['ssh_endpoints'],
      ssh_host_keys: before['ssh_host_keys'],
    });
    const r = await runSsh(live, 'echo "after $GPUX_LEASE_ID"');
    expect(r, stack.agent?.output()).toEqual({ code: 0, stdout: `after ${id}\n`, stderr: '' });
  });
});
