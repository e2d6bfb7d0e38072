// @kubernetes/client-node 1.4.0 (the version the agent pins: 2.x needs
// Node >= 22.19) against the Kubernetes API double (issue 13): CRUD with
// 404 / 409 AlreadyExists / 409 Conflict, the three patch types, namespace
// deletion, TokenRequest's minimum and cap, RBAC with the escalation check
// on Roles and RoleBindings, the scheduler and controllers, a mutating
// webhook, exec with a TTY and a resize, and the recording of every call.

import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';

import {
  ApiException,
  AppsV1Api,
  AuthorizationV1Api,
  CoreV1Api,
  Exec,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  Watch,
} from '@kubernetes/client-node';
import type { KubernetesObject, V1Status } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { signServingCert, startK8sDouble } from './index.js';
import { until } from '../support/until.js';

import type { K8sDouble, KObject } from './index.js';

let d: K8sDouble;

function config(token: string, namespace?: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(d.kubeconfigFor(token, namespace));
  return kc;
}

/** The HTTP code and Status reason of a failed call. */
async function failure(
  p: Promise<unknown>,
): Promise<{ code: number; reason: string; message: string }> {
  try {
    await p;
  } catch (err) {
    if (!(err instanceof ApiException)) throw err;
    // client-node 1.4.0 drops the body of a 401 (its generated code throws without it).
    if (err.body === undefined) return { code: err.code, reason: '', message: '' };
    const body = JSON.parse(String(err.body)) as { kind: string; reason: string; message: string };
    expect(body.kind).toBe('Status');
    return { code: err.code, reason: body.reason, message: body.message };
  }
  throw new Error('the call succeeded');
}

const AGENT_RULES = [
  {
    apiGroups: [''],
    resources: ['namespaces', 'serviceaccounts', 'secrets', 'pods'],
    verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'],
  },
  { apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'] },
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['roles', 'rolebindings'],
    verbs: ['get', 'create', 'update', 'delete'],
  },
];

beforeAll(async () => {
  d = await startK8sDouble({ maxTokenSeconds: 7200 });
  d.put({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'gpu-1', labels: { 'gpux.io/pool': 'a' } },
    status: {
      conditions: [{ type: 'Ready', status: 'True' }],
      allocatable: { 'nvidia.com/gpu': '8' },
    },
  });
  // The agent: a service account holding a ClusterRole, authenticated by a minted token.
  d.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'gpux-system' } });
  d.put({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'agent', namespace: 'gpux-system' },
  });
  d.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'agent' },
    rules: AGENT_RULES,
  });
  d.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'agent' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'agent' },
    subjects: [{ kind: 'ServiceAccount', name: 'agent', namespace: 'gpux-system' }],
  });
});
afterAll(async () => {
  await d.stop();
});
beforeEach(() => {
  d.requests.length = 0;
});

describe('objects', () => {
  it('creates, reads, lists by label, replaces, patches and deletes like a real server', async () => {
    const core = config(d.adminToken).makeApiClient(CoreV1Api);
    const ns = await core.createNamespace({
      body: { metadata: { name: 'crud', labels: { 'gpux.io/lease': 'l1' } } },
    });
    expect(ns.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(ns.metadata?.labels?.['kubernetes.io/metadata.name']).toBe('crud');
    expect(ns.status?.phase).toBe('Active');
    expect(ns.metadata?.creationTimestamp).toBeInstanceOf(Date);

    const dup = await failure(core.createNamespace({ body: { metadata: { name: 'crud' } } }));
    expect(dup).toEqual({
      code: 409,
      reason: 'AlreadyExists',
      message: 'namespaces "crud" already exists',
    });

    const cm = await core.createNamespacedConfigMap({
      namespace: 'crud',
      body: { metadata: { name: 'one', labels: { app: 'x' } }, data: { a: '1' } },
    });
    await core.createNamespacedConfigMap({
      namespace: 'crud',
      body: { metadata: { name: 'two', labels: { app: 'y' } } },
    });
    const listed = await core.listNamespacedConfigMap({
      namespace: 'crud',
      labelSelector: 'app in (x)',
    });
    expect(listed.items.map((i) => i.metadata?.name)).toEqual(['one']);
    expect(
      (
        await core.listNamespacedConfigMap({ namespace: 'crud', labelSelector: 'app!=x' })
      ).items.map((i) => i.metadata?.name),
    ).toEqual(['two']);

    const updated = await core.replaceNamespacedConfigMap({
      name: 'one',
      namespace: 'crud',
      body: { ...cm, data: { a: '2' } },
    });
    expect(Number(updated.metadata?.resourceVersion)).toBeGreaterThan(
      Number(cm.metadata?.resourceVersion),
    );
    expect(updated.metadata?.uid).toBe(cm.metadata?.uid);
    // The same stale resourceVersion again: Conflict.
    const stale = await failure(
      core.replaceNamespacedConfigMap({
        name: 'one',
        namespace: 'crud',
        body: { ...cm, data: { a: '3' } },
      }),
    );
    expect(stale.code).toBe(409);
    expect(stale.reason).toBe('Conflict');
    expect(stale.message).toContain('the object has been modified');

    const merged = await core.patchNamespacedConfigMap(
      {
        name: 'one',
        namespace: 'crud',
        body: { metadata: { labels: { extra: 'yes', app: null } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    expect(merged.metadata?.labels).toEqual({ extra: 'yes' });
    const json = await core.patchNamespacedConfigMap(
      { name: 'one', namespace: 'crud', body: [{ op: 'add', path: '/data/b', value: 'B' }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    expect(json.data).toEqual({ a: '2', b: 'B' });

    const gone = await core.deleteNamespacedConfigMap({ name: 'one', namespace: 'crud' });
    expect(gone.status).toBe('Success');
    expect(
      await failure(core.deleteNamespacedConfigMap({ name: 'one', namespace: 'crud' })),
    ).toEqual({
      code: 404,
      reason: 'NotFound',
      message: 'configmaps "one" not found',
    });
    expect(
      (await failure(core.readNamespacedConfigMap({ name: 'one', namespace: 'crud' }))).code,
    ).toBe(404);

    await core.deleteNamespace({ name: 'crud' });
    expect(d.list('v1', 'ConfigMap', 'crud')).toEqual([]);
    const orphan = await failure(
      core.createNamespacedConfigMap({ namespace: 'crud', body: { metadata: { name: 'z' } } }),
    );
    expect(orphan).toMatchObject({ code: 404, message: 'namespaces "crud" not found' });

    // What was asked, in order, and by whom.
    expect(d.calls().slice(0, 3)).toEqual([
      'create namespaces / 201',
      'create namespaces / 409',
      'create configmaps crud/ 201',
    ]);
    const calls = d.requests
      .filter((r) => r.verb !== undefined)
      .map((r) => `${r.verb} ${r.resource} ${r.name} ${r.status}`);
    expect(calls.slice(0, 4)).toEqual([
      'create namespaces  201',
      'create namespaces  409',
      'create configmaps  201',
      'create configmaps  201',
    ]);
    expect(d.requests.every((r) => r.user === 'admin')).toBe(true);
  });

  it('strategic merge patches nodes (labels, taints) as kubectl and the provisioner do', async () => {
    const core = config(d.adminToken).makeApiClient(CoreV1Api);
    d.put({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'gpu-9', labels: { keep: '1' } },
      spec: { taints: [{ key: 'other', value: 'x', effect: 'NoSchedule' }] },
    });
    const patched = await core.patchNode(
      {
        name: 'gpu-9',
        body: {
          metadata: { labels: { 'gpux.io/lease': 'l1' } },
          spec: { taints: [{ key: 'gpux.io/lease', value: 'l1', effect: 'NoSchedule' }] },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    expect(patched.metadata?.labels).toEqual({ keep: '1', 'gpux.io/lease': 'l1' });
    // Node taints have no merge key: the list is replaced, as on a real server.
    expect(patched.spec?.taints).toEqual([
      { key: 'gpux.io/lease', value: 'l1', effect: 'NoSchedule' },
    ]);
    const stale = await failure(
      core.patchNode(
        { name: 'gpu-9', body: { metadata: { resourceVersion: '1', labels: { a: 'b' } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    );
    expect(stale.reason).toBe('Conflict');
  });

  it('KubernetesObjectApi works from discovery (generic create/read/replace/delete)', async () => {
    const objects = KubernetesObjectApi.makeApiClient(config(d.adminToken));
    await objects.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'generic' } });
    const np: KubernetesObject = await objects.create({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'isolate', namespace: 'generic' },
      spec: { podSelector: {}, policyTypes: ['Ingress', 'Egress'] },
    });
    const read = await objects.read<KubernetesObject>({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'isolate', namespace: 'generic' },
    });
    expect(read.metadata?.uid).toBe(np.metadata?.uid);
    await objects.replace({ ...read, metadata: { ...read.metadata, labels: { a: 'b' } } });
    const list = await objects.list('networking.k8s.io/v1', 'NetworkPolicy', 'generic');
    expect(list.items.map((i) => i.metadata?.labels)).toEqual([{ a: 'b' }]);
    await objects.delete({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'generic' } });
    expect(d.get('networking.k8s.io/v1', 'NetworkPolicy', 'generic', 'isolate')).toBeUndefined();
    expect(d.requests.some((r) => r.path === '/apis/networking.k8s.io/v1')).toBe(true);
  });

  it('enforces a ResourceQuota on pod creation', async () => {
    const core = config(d.adminToken).makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'quota' } } });
    await core.createNamespacedResourceQuota({
      namespace: 'quota',
      body: { metadata: { name: 'q' }, spec: { hard: { pods: '0' } } },
    });
    const refused = await failure(
      core.createNamespacedPod({
        namespace: 'quota',
        body: { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'x' }] } },
      }),
    );
    expect(refused.code).toBe(403);
    expect(refused.message).toBe(
      'pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0',
    );
  });
});

describe('tokens and RBAC', () => {
  it('TokenRequest: minimum 600 s, capped at the configured maximum, dies with its Secret', async () => {
    const core = config(d.adminToken).makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'tok' } } });
    await core.createNamespacedServiceAccount({
      namespace: 'tok',
      body: { metadata: { name: 'buyer' } },
    });
    const anchor = await core.createNamespacedSecret({
      namespace: 'tok',
      body: { metadata: { name: 'anchor' } },
    });
    const tooShort = await failure(
      core.createNamespacedServiceAccountToken({
        namespace: 'tok',
        name: 'buyer',
        body: { spec: { audiences: [], expirationSeconds: 60 } },
      }),
    );
    expect(tooShort).toEqual({
      code: 422,
      reason: 'Invalid',
      message:
        'TokenRequest.authentication.k8s.io "buyer" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes',
    });
    const before = Date.now();
    const tr = await core.createNamespacedServiceAccountToken({
      namespace: 'tok',
      name: 'buyer',
      body: {
        spec: {
          audiences: [],
          expirationSeconds: 30 * 86_400,
          boundObjectRef: { apiVersion: 'v1', kind: 'Secret', name: 'anchor' },
        },
      },
    });
    expect(tr.spec.expirationSeconds).toBe(7200);
    expect((tr.spec.boundObjectRef as { uid?: string } | undefined)?.uid).toBe(
      anchor.metadata?.uid,
    );
    const expires = new Date(tr.status?.expirationTimestamp ?? 0).getTime();
    expect(expires).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 7199_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 7200_000);

    const mine = config(tr.status?.token ?? '', 'tok').makeApiClient(AuthorizationV1Api);
    const review = await mine.createSelfSubjectAccessReview({
      body: { spec: { resourceAttributes: { namespace: 'tok', verb: 'list', resource: 'pods' } } },
    });
    expect(review.status?.allowed).toBe(false);
    const who = d.requests.at(-1);
    expect(who?.user).toBe('system:serviceaccount:tok:buyer');

    await core.deleteNamespacedSecret({ name: 'anchor', namespace: 'tok' });
    const dead = await failure(
      mine.createSelfSubjectAccessReview({
        body: { spec: { resourceAttributes: { verb: 'list', resource: 'pods' } } },
      }),
    );
    expect(dead.code).toBe(401);
    const raw = await d.call('GET', '/api/v1/namespaces/tok/pods', {
      token: tr.status?.token ?? '',
    });
    expect(raw).toEqual({
      status: 401,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'Unauthorized',
        reason: 'Unauthorized',
        details: {},
        code: 401,
      },
    });

    // A minted token expires with the clock.
    const t = d.mintToken('tok', 'buyer', 600);
    const pods = config(t, 'tok').makeApiClient(CoreV1Api);
    expect((await failure(pods.listNamespacedPod({ namespace: 'tok' }))).code).toBe(403);
    d.advanceClock(601);
    try {
      expect((await failure(pods.listNamespacedPod({ namespace: 'tok' }))).code).toBe(401);
    } finally {
      d.advanceClock(-601);
    }
  });

  it("the escalation check: the agent may grant only what it holds, or with 'bind'/'escalate'", async () => {
    const agent = config(d.mintToken('gpux-system', 'agent'));
    const core = agent.makeApiClient(CoreV1Api);
    const rbac = agent.makeApiClient(RbacAuthorizationV1Api);
    await core.createNamespace({ body: { metadata: { name: 'lease-x' } } });
    await core.createNamespacedServiceAccount({
      namespace: 'lease-x',
      body: { metadata: { name: 'buyer' } },
    });
    const within = await rbac.createNamespacedRole({
      namespace: 'lease-x',
      body: {
        metadata: { name: 'buyer' },
        rules: [
          { apiGroups: [''], resources: ['pods', 'secrets'], verbs: ['get', 'list', 'create'] },
        ],
      },
    });
    expect(within.metadata?.name).toBe('buyer');
    const beyond = await failure(
      rbac.createNamespacedRole({
        namespace: 'lease-x',
        body: {
          metadata: { name: 'more' },
          rules: [{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['create'] }],
        },
      }),
    );
    expect(beyond.code).toBe(403);
    expect(beyond.reason).toBe('Forbidden');
    expect(beyond.message).toContain(
      'roles.rbac.authorization.k8s.io "more" is forbidden: user "system:serviceaccount:gpux-system:agent" (groups=["system:serviceaccounts" "system:serviceaccounts:gpux-system" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:',
    );
    expect(beyond.message).toContain(
      '{APIGroups:["apps"], Resources:["deployments"], Verbs:["create"]}',
    );

    await rbac.createNamespacedRoleBinding({
      namespace: 'lease-x',
      body: {
        metadata: { name: 'buyer' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'buyer' },
        subjects: [{ kind: 'ServiceAccount', name: 'buyer', namespace: 'lease-x' }],
      },
    });
    // A binding to a role holding more than the agent: refused, then allowed with `bind`.
    d.put({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'big' },
      rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
    });
    const bindBig = (): Promise<unknown> =>
      rbac.createNamespacedRoleBinding({
        namespace: 'lease-x',
        body: {
          metadata: { name: 'big' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'big' },
          subjects: [{ kind: 'ServiceAccount', name: 'buyer', namespace: 'lease-x' }],
        },
      });
    expect((await failure(bindBig())).code).toBe(403);
    d.put({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'binder' },
      rules: [
        {
          apiGroups: ['rbac.authorization.k8s.io'],
          resources: ['clusterroles'],
          verbs: ['bind'],
          resourceNames: ['big'],
        },
      ],
    });
    d.put({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'binder' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'binder' },
      subjects: [{ kind: 'ServiceAccount', name: 'agent', namespace: 'gpux-system' }],
    });
    await bindBig();

    // Every request of a non-admin identity is authorized: no nodes, no deployments for the agent.
    const nodes = await failure(core.listNode());
    expect(nodes.code).toBe(403);
    expect(nodes.message).toBe(
      'nodes is forbidden: User "system:serviceaccount:gpux-system:agent" cannot list resource "nodes" in API group "" at the cluster scope',
    );
    const apps = agent.makeApiClient(AppsV1Api);
    expect((await failure(apps.listNamespacedDeployment({ namespace: 'lease-x' }))).code).toBe(403);
  });
});

describe('scheduler, controllers and the mutating webhook', () => {
  let hook: Server;
  const reviews: { request: { object: KObject; operation: string; uid: string } }[] = [];

  beforeAll(async () => {
    const cert = signServingCert(d.certs, ['127.0.0.1']);
    hook = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const review = JSON.parse(
          Buffer.concat(chunks).toString('utf8'),
        ) as (typeof reviews)[number];
        reviews.push(review);
        const patch = [
          { op: 'add', path: '/spec/nodeSelector', value: { 'gpux.io/pool': 'a' } },
          {
            op: 'add',
            path: '/spec/tolerations',
            value: [{ key: 'gpux.io/lease', operator: 'Equal', value: 'l2', effect: 'NoSchedule' }],
          },
        ];
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: {
              uid: review.request.uid,
              allowed: true,
              patchType: 'JSONPatch',
              patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
            },
          }),
        );
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    d.put({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: 'placement' },
      webhooks: [
        {
          name: 'placement.gpux.io',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: 'Fail',
          clientConfig: {
            url: `https://127.0.0.1:${(hook.address() as AddressInfo).port}/mutate`,
            caBundle: Buffer.from(d.caPem).toString('base64'),
          },
          rules: [
            { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] },
          ],
          namespaceSelector: { matchExpressions: [{ key: 'gpux.io/lease', operator: 'Exists' }] },
        },
      ],
    });
  });
  afterAll(() => {
    hook.close();
  });

  it("a Deployment's pods pass the webhook and are scheduled on the matching node", async () => {
    const kc = config(d.adminToken);
    const core = kc.makeApiClient(CoreV1Api);
    const apps = kc.makeApiClient(AppsV1Api);
    await core.createNamespace({
      body: { metadata: { name: 'lease-2', labels: { 'gpux.io/lease': 'l2' } } },
    });
    await core.createNamespace({ body: { metadata: { name: 'plain' } } });
    d.put({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'gpu-2', labels: {} },
      spec: { taints: [{ key: 'gpux.io/lease', value: 'l2', effect: 'NoSchedule' }] },
      status: {
        conditions: [{ type: 'Ready', status: 'True' }],
        allocatable: { 'nvidia.com/gpu': '8' },
      },
    });
    await apps.createNamespacedDeployment({
      namespace: 'lease-2',
      body: {
        metadata: { name: 'workspace' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'ws' } },
          template: {
            metadata: { labels: { app: 'ws' } },
            spec: {
              nodeSelector: { customer: 'wants-this' },
              containers: [
                { name: 'main', image: 'cuda', resources: { limits: { 'nvidia.com/gpu': '8' } } },
              ],
            },
          },
        },
      },
    });
    let pods = await core.listNamespacedPod({ namespace: 'lease-2', labelSelector: 'app=ws' });
    for (let i = 0; i < 100 && pods.items[0]?.status?.phase !== 'Running'; i++) {
      await new Promise((r) => setTimeout(r, 20));
      pods = await core.listNamespacedPod({ namespace: 'lease-2', labelSelector: 'app=ws' });
    }
    const pod = pods.items[0];
    expect(pod?.status?.phase).toBe('Running');
    // The webhook overwrote the customer's node selector; gpu-1 lacks the toleration-free path, gpu-2's taint is tolerated.
    expect(pod?.spec?.nodeSelector).toEqual({ 'gpux.io/pool': 'a' });
    expect(pod?.spec?.nodeName).toBe('gpu-1');
    expect(reviews.at(-1)?.request.operation).toBe('CREATE');
    expect(reviews.at(-1)?.request.object.metadata.namespace).toBe('lease-2');

    // Scale to 0: the pod goes; the namespace without the label is not sent to the webhook.
    await apps.patchNamespacedDeploymentScale(
      { name: 'workspace', namespace: 'lease-2', body: { spec: { replicas: 0 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    for (let i = 0; i < 100 && d.list('v1', 'Pod', 'lease-2').length > 0; i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(d.list('v1', 'Pod', 'lease-2')).toEqual([]);
    const before = reviews.length;
    await core.createNamespacedPod({
      namespace: 'plain',
      body: {
        metadata: { name: 'p' },
        spec: {
          containers: [{ name: 'c', image: 'x', resources: { limits: { 'nvidia.com/gpu': '8' } } }],
        },
      },
    });
    expect(reviews.length).toBe(before);
  });
});

describe('exec over WebSocket', () => {
  beforeAll(() => {
    d.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ex' } });
    d.put({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'ws', namespace: 'ex' },
      spec: {
        nodeName: 'gpu-1',
        containers: [{ name: 'main', image: 'cuda', env: [{ name: 'GREETING', value: 'hi' }] }],
      },
    });
  });

  async function running(pod = 'ws'): Promise<void> {
    await until(
      `pod ${pod} running`,
      () =>
        (d.get('v1', 'Pod', 'ex', pod)?.['status'] as { phase?: string } | undefined)?.phase ===
        'Running',
      { timeoutMs: 2_000, everyMs: 20 },
    );
  }

  it('runs a command with stdout, stderr and its exit code', async () => {
    await running();
    const exec = new Exec(config(d.adminToken));
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let out = '';
    let err = '';
    stdout.on('data', (c: Buffer) => (out += c.toString()));
    stderr.on('data', (c: Buffer) => (err += c.toString()));
    const status = await new Promise<V1Status>((resolve, reject) => {
      exec
        .exec(
          'ex',
          'ws',
          'main',
          ['sh', '-c', 'echo "$GREETING out"; echo err >&2; exit 3'],
          stdout,
          stderr,
          null,
          false,
          resolve,
        )
        .catch(reject);
    });
    expect(out).toBe('hi out\n');
    expect(err).toBe('err\n');
    expect(status).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
    const upgrade = d.requests.find((r) => r.subresource === 'exec');
    expect(upgrade).toMatchObject({
      method: 'GET',
      verb: 'create',
      namespace: 'ex',
      name: 'ws',
      status: 101,
    });
  });

  it('a TTY session follows the client-side resize', async () => {
    await running();
    const exec = new Exec(config(d.adminToken));
    // A resizable stdout, as a terminal is: client-node sends {width,height} on 'resize'.
    const stdout = Object.assign(new PassThrough(), { rows: 30, columns: 100 });
    const stdin = new PassThrough();
    let out = '';
    const waitFor = async (text: string): Promise<void> => {
      await until(`"${text}" on the terminal`, () => out.includes(text), {
        timeoutMs: 5_000,
        everyMs: 20,
        output: () => out,
      });
    };
    stdout.on('data', (c: Buffer) => (out += c.toString()));
    let finish: (s: V1Status) => void = () => undefined;
    const done = new Promise<V1Status>((resolve) => (finish = resolve));
    // Connected: the initial size is queued before anything typed from here on.
    await exec.exec(
      'ex',
      'ws',
      'main',
      ['sh', '-c', 'read a; stty size; read b; stty size; exit 0'],
      stdout,
      null,
      stdin,
      true,
      finish,
    );
    stdin.write('go\n');
    await waitFor('30 100');
    stdout.rows = 40;
    stdout.columns = 120;
    stdout.emit('resize');
    stdin.write('again\n');
    await waitFor('40 120');
    expect(await done).toEqual({ metadata: {}, status: 'Success' });
    // Two round trips through a shell on a loaded machine can pass vitest's 5 s default.
  }, 30_000);

  it("deleting the pod ends a session into it with the container's death", async () => {
    d.put({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'doomed', namespace: 'ex' },
      spec: { nodeName: 'gpu-1', containers: [{ name: 'main', image: 'cuda' }] },
    });
    await running('doomed');
    const exec = new Exec(config(d.adminToken));
    const stdout = new PassThrough();
    let out = '';
    stdout.on('data', (c: Buffer) => (out += c.toString()));
    let finish: (s: V1Status) => void = () => undefined;
    const done = new Promise<V1Status>((resolve) => (finish = resolve));
    await exec.exec(
      'ex',
      'doomed',
      'main',
      ['sh', '-c', 'echo started; exec sleep 600'],
      stdout,
      null,
      null,
      false,
      finish,
    );
    for (let i = 0; i < 250 && !out.includes('started'); i++)
      await new Promise((r) => setTimeout(r, 20));
    const del = await d.call('DELETE', '/api/v1/namespaces/ex/pods/doomed');
    expect(del.status).toBe(200);
    expect(await done).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '137' }] },
    });
  });

  it('refuses exec without create on pods/exec', async () => {
    d.put({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'reader', namespace: 'ex' },
    });
    const exec = new Exec(config(d.mintToken('ex', 'reader')));
    const stdout = new PassThrough();
    await expect(
      exec.exec('ex', 'ws', 'main', ['true'], stdout, null, null, false),
    ).rejects.toThrow();
    const refused = d.requests.filter((r) => r.subresource === 'exec').at(-1);
    expect(refused).toMatchObject({ user: 'system:serviceaccount:ex:reader', status: 403 });
  });
});

describe('watch and namespace termination', () => {
  it('a watch sees the current objects, then every change', async () => {
    const kc = config(d.adminToken);
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'watched' } } });
    await core.createNamespacedConfigMap({
      namespace: 'watched',
      body: { metadata: { name: 'a' } },
    });
    const seen: string[] = [];
    const watch = new Watch(kc);
    const req = await watch.watch(
      '/api/v1/namespaces/watched/configmaps',
      {},
      (type: string, obj: KubernetesObject) => seen.push(`${type} ${obj.metadata?.name ?? ''}`),
      () => undefined,
    );
    await core.createNamespacedConfigMap({
      namespace: 'watched',
      body: { metadata: { name: 'b' } },
    });
    await core.deleteNamespacedConfigMap({ namespace: 'watched', name: 'a' });
    for (let i = 0; i < 100 && seen.length < 3; i++) await new Promise((r) => setTimeout(r, 20));
    req.abort();
    expect(seen).toEqual(['ADDED a', 'ADDED b', 'DELETED a']);
  });

  it('a deleted namespace can stay Terminating, refusing new content', async () => {
    const slow = await startK8sDouble({ namespaceTerminationMs: 60_000 });
    try {
      const kc = new KubeConfig();
      kc.loadFromString(slow.kubeconfigFor(slow.adminToken));
      const core = kc.makeApiClient(CoreV1Api);
      await core.createNamespace({ body: { metadata: { name: 'going' } } });
      await core.createNamespacedConfigMap({
        namespace: 'going',
        body: { metadata: { name: 'a' } },
      });
      const deleted = await core.deleteNamespace({ name: 'going' });
      expect((deleted as { status?: { phase?: string } }).status?.phase).toBe('Terminating');
      const ns = await core.readNamespace({ name: 'going' });
      expect(ns.status?.phase).toBe('Terminating');
      expect(ns.metadata?.deletionTimestamp).toBeInstanceOf(Date);
      expect(slow.list('v1', 'ConfigMap', 'going')).toEqual([]);
      const refused = await failure(
        core.createNamespacedConfigMap({ namespace: 'going', body: { metadata: { name: 'b' } } }),
      );
      expect(refused).toMatchObject({
        code: 403,
        message: 'unable to create new content in namespace going because it is being terminated',
      });
    } finally {
      await slow.stop();
    }
  });
});
