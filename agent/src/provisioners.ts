// The provisioner PROVISIONER names, made from the settings, with what runs
// beside it and how the SSH gateway serves SFTP for its workspaces:
//
//   simulated   workspace directories on this host; sessions run as the
//               agent's own user; the gateway serves SFTP itself
//   kubernetes  a namespace per lease (the agent's client from KUBECONFIG or
//               the in-cluster service account), the admission webhook that
//               places the lease's pods on its nodes; sessions exec into the
//               workspace pods, SFTP is the image's own sftp-server

import { existsSync, readFileSync } from 'node:fs';

import type { AgentConfig, KubernetesConfig } from './config.js';
import { AgentFatalError } from './errors.js';
import { readGpuInventory } from './inventory/nvidia-smi.js';
import type { GpuInventory } from './inventory/nvidia-smi.js';
import type { Logger } from './logger.js';
import { KubeClient, clusterCaPem, loadKubeConfig } from './provisioner/kubernetes/kube-client.js';
import { KubernetesProvisioner } from './provisioner/kubernetes/kubernetes-provisioner.js';
import { AdmissionWebhookServer } from './provisioner/kubernetes/webhook-server.js';
import type { Provisioner } from './provisioner/provisioner.js';
import { SimulatedProvisioner } from './provisioner/simulated-provisioner.js';
import type { SftpMode } from './ssh/gateway-config.js';
import { TlsFilesWatcher, checkKeyPair } from './tls-files.js';

export interface OpenProvisioner {
  readonly provisioner: Provisioner;
  /** Who serves SFTP: the gateway on the workspace directory, or the workspace's sftp-server. */
  readonly sftp: SftpMode;
  /** Stops what runs beside it (the admission webhook). */
  close(): Promise<void>;
}

export interface ProvisionerInputs {
  readonly logger: Logger;
  /** The host's GPUs (simulated: every node reports them); default nvidia-smi. */
  readonly inventory?: (() => Promise<GpuInventory>) | undefined;
}

export async function openProvisioner(
  config: AgentConfig,
  inputs: ProvisionerInputs,
): Promise<OpenProvisioner> {
  const { logger } = inputs;
  if (config.provisioner === 'simulated') {
    logger.warn(
      { uid: process.getuid?.(), listen: `${config.sshListen.host}:${config.sshListen.port}` },
      "simulated provisioner: lease shells run as this agent's own user, who can read the agent's token and state; for demos and tests only",
    );
    const provisioner = new SimulatedProvisioner({
      stateDir: config.stateDir,
      clusterId: config.clusterId,
      logger,
      inventory: inputs.inventory ?? (() => readGpuInventory()),
      provisionDelayMs: config.simulatedProvisionDelayMs,
    });
    return { provisioner, sftp: 'gateway', close: () => Promise.resolve() };
  }
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
  const provisioner = new KubernetesProvisioner({
    kube,
    clusterId: config.clusterId,
    stateDir: config.stateDir,
    publicServer: k.publicServer,
    caPem,
    workspace: { image: k.workspaceImage, command: k.workspaceCommand },
    logger,
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
  // cert-manager renews the certificate: the new one is served without a
  // restart, so a renewal never leaves lease pods refused (issue 23).
  const renewals = new TlsFilesWatcher({
    name: 'the webhook certificate (GPUX_WEBHOOK_CERT_FILE, GPUX_WEBHOOK_KEY_FILE)',
    files: { cert: k.webhookCertFile, key: k.webhookKeyFile },
    initial: { cert: k.webhookCertPem, key: k.webhookKeyPem },
    apply: ({ cert, key }) => {
      checkKeyPair(cert, key);
      webhook.setCertificate(cert, key);
    },
    logger,
  });
  renewals.start();
  return {
    provisioner,
    sftp: 'backend',
    close: () => {
      renewals.close();
      return webhook.close();
    },
  };
}

const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

function kubeClientOf(k: KubernetesConfig): KubeClient {
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
