// The provider path in Kubernetes mode end to end (issue 13), every part its
// own process but the cluster: the built exchange on a fresh PostgreSQL
// database publishing to this machine's NATS, the built agent with
// PROVISIONER=kubernetes on the Kubernetes API double (test/k8s-double: no
// real API server can be had here), the real OpenSSH client and the real
// kubectl. A buyer registers a key (D32) and buys 8 GPUs over HTTP; the
// lease becomes active; ssh, pinned to the reported host key, runs a command
// in the lease's workspace pod (an exec into it) and forwards a port to it
// (ssh -L, a port-forward into the pod), and scp and sftp run the pod's own
// sftp-server; the kubeconfig the exchange
// serves (D28) works in the lease's namespace only. Terminating (D26) closes
// the open session, refuses new logins, kills the token everywhere, removes
// the namespace, 404s the kubeconfig and credits the refund. The revocation
// times are printed (against the double: no scheduling, no image pull).

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { EXEC_PROTOCOLS } from './k8s-double/index.js';
import { K8sCluster } from './support/k8s-cluster.js';
import { kubectlIn } from './support/kubectl.js';
import { freePort } from './support/net.js';
import { SFTP_SERVER, requireProgram } from './support/prerequisites.js';
import type { Kubectl } from './support/kubectl.js';
import { ProviderStack } from './support/provider-stack.js';
import {
  finished,
  leaseTarget,
  makeSshKey,
  openSession,
  runSsh,
  sshOptions,
} from './support/ssh-client.js';
import type { SshKey, SshTarget } from './support/ssh-client.js';

const ASK = 2.5;
const HOURS = 2;
const NODES = ['k8s-gpu-a', 'k8s-gpu-b'];

let cluster: K8sCluster;
let stack: ProviderStack;
let kubectl: Kubectl;
let key: SshKey;
let leaseId = '';
let namespace = '';
let leaseNodes: string[] = [];
let target: SshTarget;
let kubeconfig = '';

beforeAll(async () => {
  cluster = await K8sCluster.start(NODES);
  stack = await ProviderStack.start({
    label: 'gpux_e2e_k8s',
    nodes: NODES,
    askPrice: ASK.toFixed(2),
    agentEnv: cluster.agentEnv,
  });
  kubectl = kubectlIn(stack.dir);
  key = makeSshKey(stack.dir, 'buyer');
});

afterAll(async () => {
  await stack?.close();
  await cluster?.stop();
});

/** kubectl with the lease's kubeconfig; its output for failure messages. */
async function kube(...args: string[]): Promise<{ code: number; out: string }> {
  const r = await kubectl(kubeconfig, ...args);
  return { code: r.code, out: `${r.stdout}${r.stderr}` };
}

describe('the provider path in kubernetes mode: exchange, NATS, agent, API double, OpenSSH, kubectl', () => {
  it('a buyer registers a key and buys 8 GPUs; the lease becomes active on its namespace', async () => {
    await stack.ok('POST', '/v1/ssh_keys', stack.buyer.token, {
      name: 'laptop',
      public_key: key.publicKey,
    });
    // GPUs from Node status: the agent lists each Ready node's 8 nvidia.com/gpu.
    await stack.waitForAsks(16);
    const order = await stack.buyNode(stack.buyer.token, HOURS);
    expect(order).toMatchObject({ status: 'filled', matched_price: ASK });
    leaseId = order['lease_id'] as string;

    const lease = await stack.waitForLease(leaseId);
    expect(lease).toMatchObject({ status: 'active', cluster_id: stack.clusterId, gpu_count: 8 });
    namespace = lease['namespace'] as string;
    leaseNodes = lease['nodes'] as string[];
    expect(leaseNodes).toHaveLength(1);
    expect(NODES).toContain(leaseNodes[0]);

    // D30: the lease's namespace, labelled with it; its workspace pod on the lease's node.
    const ns = cluster.double.get('v1', 'Namespace', '', namespace);
    expect(ns?.metadata.labels?.['gpux.io/lease']).toBe(leaseId);
    const pods = cluster.double.list('v1', 'Pod', namespace);
    expect(pods.map((p) => (p['spec'] as { nodeName?: string }).nodeName)).toEqual(leaseNodes);

    expect(lease['ssh_endpoints']).toHaveLength(1);
    target = leaseTarget(lease, key, join(stack.dir, 'known_hosts'));
    expect(target.endpoint).toMatchObject({ host: '127.0.0.1', port: stack.agent?.sshPort });
  });

  it('the real OpenSSH client, pinned to the reported host key, runs a command in the workspace pod', async () => {
    const execs = (): number =>
      cluster.double
        .calls()
        .filter((c) => c.startsWith('create pods/exec ') && c.includes(` ${namespace}/`)).length;
    const before = execs();
    const r = await runSsh(target, 'echo in-the-workspace; exit 3');
    expect(r, stack.agent?.output()).toEqual({
      code: 3,
      stdout: 'in-the-workspace\n',
      stderr: '',
    });
    // The session was an exec into the lease's workspace pod.
    expect(execs()).toBe(before + 1);
  });

  it("ssh -L to the pod's own port reaches a server in the workspace pod (a port-forward through the API)", async () => {
    const podPort = await freePort();
    const localPort = await freePort();
    // The server runs in the pod, started by the same session that holds the forward.
    const server = `exec node -e "require('net').createServer((c) => c.end('hello from the pod\\n')).listen(${podPort}, '127.0.0.1', () => console.log('pod-listening'))"`;
    const { child, ended } = await openSession(target, 'pod-listening', server, [
      '-L',
      `${localPort}:localhost:${podPort}`,
    ]);
    try {
      const got = await new Promise<string>((resolve, reject) => {
        let out = '';
        const s = connect({ host: '127.0.0.1', port: localPort });
        s.on('data', (d: Buffer) => (out += d.toString()));
        s.on('close', () => resolve(out));
        s.on('error', reject);
      });
      expect(got).toBe('hello from the pod\n');
      expect(
        cluster.double
          .calls()
          .some((c) => c.startsWith('create pods/portforward ') && c.includes(` ${namespace}/`)),
      ).toBe(true);
    } finally {
      child.kill();
      await ended;
    }
  });

  it("scp and sftp move files through the workspace pod's own sftp-server (an exec into the pod)", async (ctx) => {
    // The double's pods run on this machine: the image's sftp-server is this machine's.
    requireProgram(ctx, SFTP_SERVER);
    const { endpoint, key, knownHosts } = target;
    const options = sshOptions(key, knownHosts, endpoint.port).map((a) => (a === '-p' ? '-P' : a));
    const dest = `${endpoint.user}@${endpoint.host}`;
    const tool = (cmd: string, args: string[], input = '') => {
      const child = spawn(cmd, [...options, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
      child.stdin.end(input);
      return finished(child);
    };
    const execs = (): number =>
      cluster.double
        .calls()
        .filter((c) => c.startsWith('create pods/exec ') && c.includes(` ${namespace}/`)).length;
    const before = execs();
    // The double's pods share this machine's file system.
    const podDir = join(stack.dir, 'in-the-pod');
    mkdirSync(podDir);
    const local = join(stack.dir, 'upload.bin');
    const payload = randomBytes(1024 * 1024 + 17);
    writeFileSync(local, payload);
    const up = await tool('scp', [local, `${dest}:${podDir}/up.bin`]);
    expect(up, up.stderr).toMatchObject({ code: 0 });
    expect(readFileSync(join(podDir, 'up.bin')).equals(payload)).toBe(true);
    const back = join(stack.dir, 'download.bin');
    const down = await tool('scp', [`${dest}:${podDir}/up.bin`, back]);
    expect(down, down.stderr).toMatchObject({ code: 0 });
    expect(readFileSync(back).equals(payload)).toBe(true);
    const batch = await tool('sftp', ['-b', '-', dest], `cd ${podDir}\nls -1\nrm up.bin\n`);
    expect(batch, batch.stderr).toMatchObject({ code: 0 });
    expect(batch.stdout).toMatch(/^up\.bin$/m);
    expect(existsSync(join(podDir, 'up.bin'))).toBe(false);
    // Each was an exec of the image's sftp-server in the lease's pod.
    expect(execs()).toBe(before + 3);
    // An API server before 1.30 (no v5.channel.k8s.io) cannot close an
    // exec's stdin alone: the client's final EOF ends the whole exec instead,
    // so the session still closes.
    cluster.double.setExecProtocols(['v4.channel.k8s.io']);
    try {
      const old = await tool(
        'sftp',
        ['-b', '-', dest],
        `cd ${podDir}\nput ${local} again.bin\nls -1\n`,
      );
      expect(old, old.stderr).toMatchObject({ code: 0 });
      expect(old.stdout).toMatch(/^again\.bin$/m);
      expect(readFileSync(join(podDir, 'again.bin')).equals(payload)).toBe(true);
    } finally {
      cluster.double.setExecProtocols(EXEC_PROTOCOLS);
    }
  });

  it("the exchange's kubeconfig works with the real kubectl in the lease's namespace only (D28)", async () => {
    const k = await stack.call('GET', `/v1/leases/${leaseId}/kubeconfig`, stack.buyer.token);
    expect(k.status).toBe(200);
    expect(k.contentType).toMatch(/^application\/yaml/);
    kubeconfig = k.text;
    // The cluster's public API address, not the agent's in-cluster one.
    expect(kubeconfig).toContain(cluster.double.url);

    const get = await kube('get', 'pods', '-n', namespace, '-o', 'name');
    expect(get.code, get.out).toBe(0);
    expect(get.out).toMatch(/^pod\//m);
    const can = await kube('auth', 'can-i', 'create', 'pods', '-n', namespace);
    expect(can, can.out).toEqual({ code: 0, out: 'yes\n' });

    // Another namespace and cluster-wide: refused.
    for (const other of ['gpux-system', 'default']) {
      expect((await kube('get', 'pods', '-n', other)).out).toMatch(/Forbidden|forbidden/);
      expect(await kube('auth', 'can-i', 'create', 'pods', '-n', other)).toMatchObject({
        code: 1,
        out: expect.stringMatching(/^no\b/) as string,
      });
    }
    expect((await kube('get', 'pods', '--all-namespaces')).out).toMatch(/forbidden/i);
    expect((await kube('get', 'nodes')).out).toMatch(/forbidden/i);
    expect((await kube('auth', 'can-i', 'create', 'pods', '--all-namespaces')).code).toBe(1);
  });

  it('terminate (D26): session closed, login refused, token dead everywhere, namespace gone, kubeconfig 404, refund', async () => {
    const session = await openSession(target);
    const balanceBefore = await stack.balance();

    const t0 = performance.now();
    const { rate, refund } = await stack.terminate(leaseId);
    const answeredMs = performance.now() - t0;
    expect(rate).toBe(ASK);
    expect(refund).toBeGreaterThan(0);

    const closed = await session.ended;
    const closedMs = performance.now() - t0;
    expect(closed.code).toBe(255);
    expect(closed.stderr).toContain(`gpux: lease ${leaseId} terminated`);
    const again = await runSsh(target, 'echo ok');
    expect(again).toMatchObject({ code: 255, stdout: '' });
    expect(again.stderr).toMatch(/Permission denied/);
    const refusedMs = performance.now() - t0;

    // Revocation removes the RoleBinding, Secret and ServiceAccount before the
    // pods and the namespace: once the namespace is gone the token is dead.
    await stack.waitFor('the namespace removed from the cluster', () =>
      cluster.double.get('v1', 'Namespace', '', namespace) === undefined ? true : undefined,
    );
    const goneMs = performance.now() - t0;
    for (const args of [
      ['get', 'pods', '-n', namespace],
      ['auth', 'can-i', 'create', 'pods', '-n', namespace],
      ['get', 'pods', '-n', 'default'],
      ['get', 'nodes'],
    ]) {
      const r = await kube(...args);
      expect(r.code, `kubectl ${args.join(' ')}: ${r.out}`).not.toBe(0);
      expect(r.out).toMatch(/Unauthorized|must be logged in/);
    }
    // Only this lease's labels and taints leave its node (D30).
    for (const name of leaseNodes) {
      const node = cluster.double.get('v1', 'Node', '', name);
      expect(node?.metadata.labels?.['gpux.io/lease']).toBeUndefined();
      const taints = (node?.['spec'] as { taints?: { value?: string }[] }).taints ?? [];
      expect(taints.filter((t) => t.value === leaseId)).toEqual([]);
    }

    const kube404 = await stack.call('GET', `/v1/leases/${leaseId}/kubeconfig`, stack.buyer.token);
    expect(kube404.status).toBe(404);
    expect(await stack.ok('GET', `/v1/leases/${leaseId}`, stack.buyer.token)).toMatchObject({
      status: 'terminated',
      end_reason: 'terminated',
      ssh_endpoints: [],
    });
    const refunds = (await stack.transactions()).filter(
      (r) => r.lease_id === leaseId && r.kind === 'refund',
    );
    expect(refunds).toEqual([expect.objectContaining({ amount: refund })]);
    const balanceAfter = await stack.balance();
    expect(balanceAfter).toBeCloseTo(balanceBefore + refund, 2);

    console.log(
      `kubernetes provider path (API double: no scheduling, no image pull): DELETE answered in ${answeredMs.toFixed(0)} ms; open session closed ${closedMs.toFixed(0)} ms, new login refused ${refusedMs.toFixed(0)} ms, namespace gone (token dead) ${goneMs.toFixed(0)} ms after it`,
    );
  });
});
