// A Kubernetes cluster for the agent in kubernetes mode, on the API double
// (test/k8s-double): GPU nodes (8 nvidia.com/gpu each, Ready), the agent's
// ServiceAccount bound to a ClusterRole of AGENT_CLUSTER_RULES (what
// deploy/agent installs), its kubeconfig file, the admission webhook's
// serving certificate signed by the double's CA, and the
// MutatingWebhookConfiguration pointing at the agent's webhook port; and the
// agent settings that go with them.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  AGENT_CLUSTER_ROLE_NAME,
  agentClusterRole,
} from '../../agent/src/provisioner/kubernetes/permissions.js';
import { signServingCert, startK8sDouble } from '../k8s-double/index.js';
import type { K8sDouble, RecordedRequest } from '../k8s-double/index.js';
import { freePort } from './net.js';

export const AGENT_NAMESPACE = 'gpux-system';
export const AGENT_SERVICE_ACCOUNT = 'gpux-agent';
export const AGENT_USER = `system:serviceaccount:${AGENT_NAMESPACE}:${AGENT_SERVICE_ACCOUNT}`;

/** GPU nodes as GPU feature discovery labels them: 8 allocatable `nvidia.com/gpu` each, Ready. */
export function putGpuNodes(
  double: K8sDouble,
  nodes: readonly string[],
  gpuProduct = 'NVIDIA-H100-80GB-HBM3',
): void {
  for (const name of nodes) {
    double.put({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name,
        labels: { 'kubernetes.io/hostname': name, 'nvidia.com/gpu.product': gpuProduct },
      },
      spec: {},
      status: {
        allocatable: { 'nvidia.com/gpu': '8' },
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
      },
    });
  }
}

/**
 * The agent's identity as deploy/agent installs it: its namespace, its
 * ServiceAccount, a ClusterRole of AGENT_CLUSTER_RULES bound to it. Returns a
 * kubeconfig (YAML) with a day's token of that service account.
 */
export function putAgentIdentity(double: K8sDouble): string {
  double.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: AGENT_NAMESPACE } });
  double.put({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: AGENT_SERVICE_ACCOUNT, namespace: AGENT_NAMESPACE },
  });
  double.put(agentClusterRole());
  double.put({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'gpux-agent' },
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: AGENT_CLUSTER_ROLE_NAME,
    },
    subjects: [{ kind: 'ServiceAccount', name: AGENT_SERVICE_ACCOUNT, namespace: AGENT_NAMESPACE }],
  });
  return double.kubeconfigFor(double.mintToken(AGENT_NAMESPACE, AGENT_SERVICE_ACCOUNT, 86_400));
}

/** The agent's pod-placement admission webhook, registered as deploy/agent registers it. */
export function putPlacementWebhook(double: K8sDouble, port: number): void {
  double.put({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'gpux-pod-placement' },
    webhooks: [
      {
        name: 'pod-placement.gpux.io',
        clientConfig: {
          url: `https://127.0.0.1:${port}/mutate-pods`,
          caBundle: Buffer.from(double.caPem).toString('base64'),
        },
        rules: [
          { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] },
        ],
        failurePolicy: 'Fail',
        namespaceSelector: { matchExpressions: [{ key: 'gpux.io/lease', operator: 'Exists' }] },
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      },
    ],
  });
}

export class K8sCluster {
  private constructor(
    readonly double: K8sDouble,
    readonly dir: string,
    /** PROVISIONER=kubernetes and its settings for the agent. */
    readonly agentEnv: Record<string, string>,
  ) {}

  static async start(nodes: readonly string[], gpuProduct?: string): Promise<K8sCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'gpux-k8s-cluster-'));
    const double = await startK8sDouble({});
    putGpuNodes(double, nodes, gpuProduct);
    const kubeconfig = join(dir, 'agent.kubeconfig');
    writeFileSync(kubeconfig, putAgentIdentity(double));
    const serving = signServingCert(double.certs, ['127.0.0.1']);
    writeFileSync(join(dir, 'webhook.crt'), serving.certPem);
    writeFileSync(join(dir, 'webhook.key'), serving.keyPem, { mode: 0o600 });
    const webhookPort = await freePort();
    putPlacementWebhook(double, webhookPort);
    return new K8sCluster(double, dir, {
      PROVISIONER: 'kubernetes',
      KUBECONFIG: kubeconfig,
      GPUX_KUBE_PUBLIC_SERVER: double.url,
      GPUX_WEBHOOK_LISTEN: `127.0.0.1:${webhookPort}`,
      GPUX_WEBHOOK_CERT_FILE: join(dir, 'webhook.crt'),
      GPUX_WEBHOOK_KEY_FILE: join(dir, 'webhook.key'),
    });
  }

  /** The agent's API requests after `seq` that concern this lease (its namespace, its nodes). */
  leaseCalls(seq: number, namespace: string, nodes: readonly string[]): RecordedRequest[] {
    return this.double.requests.filter(
      (r) =>
        r.seq > seq &&
        r.user === AGENT_USER &&
        (r.namespace === namespace ||
          (r.resource === 'namespaces' && r.name === namespace) ||
          (r.resource === 'nodes' && r.name !== undefined && nodes.includes(r.name))),
    );
  }

  get lastSeq(): number {
    return this.double.requests.at(-1)?.seq ?? 0;
  }

  async stop(): Promise<void> {
    await this.double.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
