// PROVISIONER=kubernetes (issue 13): the agent's Kubernetes client (KUBECONFIG
// or the in-cluster service account), the provisioner, the SSH gateway whose
// sessions exec into the lease's workspace pods, and the admission webhook
// that places every pod of a lease's namespace on the lease's nodes.

import { existsSync, readFileSync } from 'node:fs';

import type { AgentSsh, ProvisionerFactory } from './assemble.js';
import type { AgentConfig, KubernetesConfig } from './config.js';
import { AgentFatalError } from './errors.js';
import type { Logger } from './logger.js';
import { KubeClient, clusterCaPem, loadKubeConfig } from './provisioner/kubernetes/kube-client.js';
import { KubernetesProvisioner } from './provisioner/kubernetes/kubernetes-provisioner.js';
import { PodExecBackend } from './provisioner/kubernetes/pod-exec-backend.js';
import { AdmissionWebhookServer } from './provisioner/kubernetes/webhook-server.js';
import { sshGatewayFactory } from './local-ssh.js';

const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export function kubeClientOf(k: KubernetesConfig): KubeClient {
  if (k.kubeconfigPath === undefined && !existsSync(IN_CLUSTER_TOKEN)) {
    throw new AgentFatalError(
      'PROVISIONER=kubernetes needs KUBECONFIG or an in-cluster service account (no token at ' +
        `${IN_CLUSTER_TOKEN})`,
    );
  }
  try {
    return new KubeClient(loadKubeConfig(k.kubeconfigPath));
  } catch (err) {
    throw new AgentFatalError(
      `the Kubernetes client cannot be configured from ${k.kubeconfigPath ?? 'the in-cluster service account'}: ${(err as Error).message}`,
      { cause: err },
    );
  }
}

export interface KubernetesAgent {
  readonly ssh: AgentSsh<PodExecBackend>;
  readonly makeProvisioner: ProvisionerFactory<PodExecBackend>;
}

export function kubernetesAgent(config: AgentConfig, logger: Logger): KubernetesAgent {
  const k = config.kubernetes;
  if (k === undefined) throw new AgentFatalError('PROVISIONER=kubernetes without its settings');
  const kube = kubeClientOf(k);
  let caPem: string;
  try {
    caPem = clusterCaPem(kube.config, (p) => readFileSync(p));
  } catch (err) {
    throw new AgentFatalError(`the cluster's CA for lease kubeconfigs: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const ssh: AgentSsh<PodExecBackend> = {
    // SFTP is the workspace image's own sftp-server, run by an exec (PodExecBackend).
    gatewayFactory: (o) => sshGatewayFactory(o, 'backend'),
    backendFactory: () => {
      throw new Error('kubernetes: session backends are made by the provisioner');
    },
    // Answers logins of leases still provisioning or ended; no session runs on it.
    idleBackend: new PodExecBackend(kube, {
      leaseId: '',
      namespace: '',
      nodeIndex: 0,
      hostname: '',
    }),
  };
  const makeProvisioner: ProvisionerFactory<PodExecBackend> = async (hooks) => {
    const provisioner = new KubernetesProvisioner<PodExecBackend>({
      kube,
      clusterId: config.clusterId,
      stateDir: config.stateDir,
      publicServer: k.publicServer,
      caPem,
      workspace: { image: k.workspaceImage, command: k.workspaceCommand },
      backendFactory: (target) => new PodExecBackend(kube, target),
      logger,
      onAccessChanged: hooks.onAccessChanged,
    });
    const webhook = new AdmissionWebhookServer({
      host: k.webhookListen.host,
      port: k.webhookListen.port,
      certPem: k.webhookCertPem,
      keyPem: k.webhookKeyPem,
      leaseOfNamespace: (ns) => provisioner.leaseOfNamespace(ns),
      logger,
    });
    try {
      const at = await webhook.start();
      logger.info({ listen: `${at.host}:${at.port}` }, 'admission webhook listening');
    } catch (err) {
      throw new AgentFatalError(
        `the admission webhook cannot listen on GPUX_WEBHOOK_LISTEN ${k.webhookListen.host}:${k.webhookListen.port}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    return {
      provisioner,
      close: async () => {
        provisioner.close();
        await webhook.close();
      },
    };
  };
  return { ssh, makeProvisioner };
}
