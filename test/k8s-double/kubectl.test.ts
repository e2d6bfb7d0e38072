// The real kubectl against the Kubernetes API double (issue 13): with a
// kubeconfig holding a token minted by TokenRequest for a lease's service
// account, bound to its anchor Secret, `get pods` and `auth can-i create
// pods` succeed in the lease's namespace where its Role allows, are refused
// in another namespace and cluster-wide, and are refused once the Secret or
// the ServiceAccount is deleted (D28). Run with the kubectl the machine's
// dispatcher picks for 1.27 (SelfSubjectAccessReview as JSON) and 1.33
// (as protobuf).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { kubectlIn } from '../support/kubectl.js';
import { startK8sDouble } from './index.js';
import type { K8sDouble, KObject } from './index.js';

const scratch = mkdtempSync(join(tmpdir(), 'k8s-double-kubectl-'));
const kubectl = kubectlIn(scratch);

function ns(name: string): KObject {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name } };
}

/** A lease's access, as the provisioner sets it up: SA, anchor Secret, Role, RoleBinding. */
function leaseAccess(d: K8sDouble, namespace: string): void {
  d.put(ns(namespace));
  d.put({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'buyer', namespace } });
  d.put({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'buyer-anchor', namespace },
    type: 'Opaque',
  });
  d.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'buyer', namespace },
    rules: [
      {
        apiGroups: [''],
        resources: ['pods', 'services', 'configmaps', 'secrets'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
      },
      { apiGroups: [''], resources: ['pods/exec'], verbs: ['get', 'create'] },
    ],
  });
  d.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'buyer', namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'buyer' },
    subjects: [{ kind: 'ServiceAccount', name: 'buyer', namespace }],
  });
}

/** POST serviceaccounts/buyer/token bound to the anchor Secret, as the admin. */
async function requestToken(d: K8sDouble, namespace: string, seconds: number): Promise<string> {
  const res = await d.call('POST', `/api/v1/namespaces/${namespace}/serviceaccounts/buyer/token`, {
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        expirationSeconds: seconds,
        boundObjectRef: { apiVersion: 'v1', kind: 'Secret', name: 'buyer-anchor' },
      },
    },
  });
  expect(res.status).toBe(201);
  return (res.body as { status: { token: string } }).status.token;
}

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe.each([27, 33])('kubectl 1.%i against the double', (minor) => {
  let d: K8sDouble;
  let token: string;
  let config: string;

  beforeAll(async () => {
    d = await startK8sDouble({ minorVersion: minor, maxTokenSeconds: 7200 });
    leaseAccess(d, 'lease-a');
    leaseAccess(d, 'lease-b');
    token = await requestToken(d, 'lease-a', 3600);
    config = d.kubeconfigFor(token, 'lease-a');
  });
  afterAll(async () => {
    await d.stop();
  });

  it('reports the version the dispatcher picks kubectl by', async () => {
    const r = await kubectl(config, 'version', '-o', 'json');
    expect(r.code).toBe(0);
    const v = JSON.parse(r.stdout) as {
      clientVersion: { minor: string };
      serverVersion: { minor: string };
    };
    expect(v.serverVersion.minor).toBe(String(minor));
    expect(v.clientVersion.minor).toBe(String(minor));
  });

  it("get pods and can-i create pods succeed in the lease's namespace", async () => {
    d.put({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'workspace-0', namespace: 'lease-a' },
      spec: { containers: [{ name: 'main', image: 'cuda' }] },
    });
    const get = await kubectl(config, 'get', 'pods', '-n', 'lease-a');
    expect(get.stderr).toBe('');
    expect(get.code).toBe(0);
    expect(get.stdout).toContain('workspace-0');
    const can = await kubectl(config, 'auth', 'can-i', 'create', 'pods', '-n', 'lease-a');
    expect(can.stdout.trim()).toBe('yes');
    expect(can.code).toBe(0);
    const exec = await kubectl(config, 'auth', 'can-i', 'create', 'pods/exec', '-n', 'lease-a');
    expect(exec.stdout.trim()).toBe('yes');
    const ssar = d.requests.filter((q) => q.resource === 'selfsubjectaccessreviews');
    expect(ssar.length).toBeGreaterThan(0);
    // kubectl 1.32+ posts the review as protobuf; 1.27 as JSON.
    expect(ssar.at(-1)?.contentType).toBe(
      minor >= 32 ? 'application/vnd.kubernetes.protobuf' : 'application/json',
    );
    expect(ssar.every((q) => q.user === 'system:serviceaccount:lease-a:buyer')).toBe(true);
  });

  it('auth can-i --list shows the Role in its namespace, and nothing of it elsewhere', async () => {
    const mine = await kubectl(config, 'auth', 'can-i', '--list', '-n', 'lease-a');
    expect(mine.code).toBe(0);
    expect(mine.stdout).toMatch(/^pods\/exec\s+\[\]\s+\[\]\s+\[get create\]$/m);
    const other = await kubectl(config, 'auth', 'can-i', '--list', '-n', 'lease-b');
    expect(other.code).toBe(0);
    expect(other.stdout).not.toContain('pods');
  });

  it('is refused in another namespace and cluster-wide', async () => {
    const get = await kubectl(config, 'get', 'pods', '-n', 'lease-b');
    expect(get.code).toBe(1);
    expect(get.stderr).toContain(
      'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:lease-a:buyer" cannot list resource "pods" in API group "" in the namespace "lease-b"',
    );
    const can = await kubectl(config, 'auth', 'can-i', 'create', 'pods', '-n', 'lease-b');
    expect(can.stdout.trim()).toBe('no');
    expect(can.code).toBe(1);
    const all = await kubectl(config, 'get', 'pods', '--all-namespaces');
    expect(all.code).toBe(1);
    expect(all.stderr).toContain('at the cluster scope');
    const canAll = await kubectl(config, 'auth', 'can-i', 'create', 'pods', '--all-namespaces');
    expect(canAll.stdout.trim()).toBe('no');
    const nodes = await kubectl(config, 'get', 'nodes');
    expect(nodes.stderr).toContain('cannot list resource "nodes"');
    const canNs = await kubectl(config, 'auth', 'can-i', 'create', 'namespaces');
    expect(canNs.stdout.trim()).toBe('no');
    const canRole = await kubectl(config, 'auth', 'can-i', 'create', 'roles', '-n', 'lease-a');
    expect(canRole.stdout.trim()).toBe('no');
  });

  it('a bad token is Unauthorized', async () => {
    const r = await kubectl(d.kubeconfigFor('not-a-token'), 'get', 'pods', '-n', 'lease-a');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('You must be logged in to the server');
  });

  it('is refused everywhere once the bound Secret is deleted', async () => {
    const del = await d.call('DELETE', '/api/v1/namespaces/lease-a/secrets/buyer-anchor');
    expect(del.status).toBe(200);
    const get = await kubectl(config, 'get', 'pods', '-n', 'lease-a');
    expect(get.code).toBe(1);
    expect(get.stderr).toContain('You must be logged in to the server');
    const can = await kubectl(config, 'auth', 'can-i', 'create', 'pods', '-n', 'lease-a');
    expect(can.code).not.toBe(0);
    expect(can.stdout.trim()).not.toBe('yes');
  });

  it('is refused everywhere once the ServiceAccount is deleted', async () => {
    const fresh = await requestToken(d, 'lease-b', 3600);
    const cfg = d.kubeconfigFor(fresh, 'lease-b');
    expect((await kubectl(cfg, 'get', 'pods', '-n', 'lease-b')).code).toBe(0);
    const del = await d.call('DELETE', '/api/v1/namespaces/lease-b/serviceaccounts/buyer');
    expect(del.status).toBe(200);
    const get = await kubectl(cfg, 'get', 'pods', '-n', 'lease-b');
    expect(get.stderr).toContain('You must be logged in to the server');
    const can = await kubectl(cfg, 'auth', 'can-i', 'create', 'pods', '-n', 'lease-b');
    expect(can.stdout.trim()).not.toBe('yes');
  });
});
