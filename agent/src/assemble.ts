// The agent's parts, made and connected once at start (agent.ts runs them):
// its memory of leases, the provisioner, the SSH directory and gateway, the
// exchange client, the lease worker, the reconciler and the seller.

import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';

import type { HostFacts } from '@gpux/proto';
import type { InProcessBus } from '@gpux/shared';

import type { AgentConfig } from './config.js';
import { AgentFatalError } from './errors.js';
import { GrpcExchangeClient } from './exchange/exchange-client.js';
import type { ExchangeApi } from './exchange/exchange-client.js';
import { PacedExchange } from './exchange/paced-exchange.js';
import { readGpuInventory } from './inventory/nvidia-smi.js';
import type { GpuInventory } from './inventory/nvidia-smi.js';
import { LeaseDirectory } from './lease-directory.js';
import { LeaseWorker } from './leases/lease-worker.js';
import { Reconciler } from './leases/reconciler.js';
import type { Logger } from './logger.js';
import type { Provisioner } from './provisioner/provisioner.js';
import { SimulatedProvisioner } from './provisioner/simulated-provisioner.js';
import type { BackendFactory, TerminableBackend } from './provisioner/simulated-provisioner.js';
import { Seller } from './selling/seller.js';
import type { GatewayFactory, SshGatewayPort } from './ssh-port.js';
import { ReportMarks } from './state/report-marks.js';
import { Tombstones } from './state/tombstones.js';

/** The SSH gateway and its session backends (agent/src/ssh), given together. */
export interface AgentSsh<B> {
  readonly gatewayFactory: GatewayFactory<B>;
  readonly backendFactory: BackendFactory<B>;
  /** Stands in for endpoints that are not ready; no session runs on it. */
  readonly idleBackend: B;
}

export interface AgentDeps<B> {
  readonly logger?: Logger;
  /** `gpux start`: events from the exchange's in-process bus instead of NATS. */
  readonly bus?: InProcessBus;
  /** Another way to reach the exchange than gRPC (tests). */
  readonly exchange?: ExchangeApi;
  /** Unset: no SSH gateway runs (the agent says so at start). */
  readonly ssh?: AgentSsh<B>;
  readonly inventory?: () => Promise<GpuInventory>;
  readonly hostFacts?: () => Promise<HostFacts>;
}

/** What the provisioner needs from the agent once the agent's parts exist. */
export interface ProvisionerHooks {
  /** A lease's access changed on its own (a refreshed token): report it again. */
  readonly onAccessChanged: (leaseId: string) => void;
}

/** The provisioner of PROVISIONER, and what must be closed with it (the admission webhook). */
export interface ProvisionerParts<B> {
  readonly provisioner: Provisioner<B>;
  close(): Promise<void>;
}

export type ProvisionerFactory<B> = (
  hooks: ProvisionerHooks,
) => Promise<ProvisionerParts<B>> | ProvisionerParts<B>;

/** PROVISIONER=simulated: workspace directories on this host. */
export function simulatedProvisioner<B extends TerminableBackend>(
  config: AgentConfig,
  deps: Pick<AgentDeps<B>, 'inventory'>,
  ssh: AgentSsh<B>,
  logger: Logger,
): ProvisionerFactory<B> {
  return () => {
    logger.warn(
      { uid: process.getuid?.(), listen: `${config.sshListen.host}:${config.sshListen.port}` },
      "simulated provisioner: lease shells run as this agent's own user, who can read the agent's token and state; for demos and tests only",
    );
    const provisioner = new SimulatedProvisioner<B>({
      stateDir: config.stateDir,
      clusterId: config.clusterId,
      backendFactory: ssh.backendFactory,
      inventory: deps.inventory ?? (() => readGpuInventory()),
      provisionDelayMs: config.simulatedProvisionDelayMs,
    });
    return { provisioner, close: () => Promise.resolve() };
  };
}

export interface AgentParts<B extends TerminableBackend> {
  readonly provisioner: Provisioner<B>;
  /** Closes what the provisioner runs besides (the admission webhook, token timers). */
  readonly closeProvisioner: () => Promise<void>;
  readonly directory: LeaseDirectory<B>;
  readonly gateway: SshGatewayPort;
  /** Where the gateway listened (kept: a closed gateway has no address). */
  readonly sshAddress: { readonly host: string; readonly port: number };
  /** Every call of the agent goes through it: it keeps within the exchange's limits. */
  readonly exchange: PacedExchange;
  readonly worker: LeaseWorker<B>;
  readonly reconciler: Reconciler<B>;
  /** undefined: GPUX_ASK_PRICE unset. */
  readonly seller: Seller | undefined;
}

export async function assembleAgent<B extends TerminableBackend>(
  config: AgentConfig,
  deps: Omit<AgentDeps<B>, 'ssh'>,
  ssh: AgentSsh<B>,
  logger: Logger,
  /** A lease's access is gone: its nodes are free again. */
  onLeaseEnded: () => void,
  makeProvisioner: ProvisionerFactory<B> = simulatedProvisioner(config, deps, ssh, logger),
): Promise<AgentParts<B>> {
  const clusterId = config.clusterId;
  await mkdir(config.stateDir, { recursive: true, mode: 0o700 });
  const tombstones = new Tombstones(config.stateDir);
  const reports = new ReportMarks(config.stateDir);
  await tombstones.load();
  await reports.load();

  let accessChanged = (_leaseId: string): void => undefined;
  const made = await makeProvisioner({
    onAccessChanged: (leaseId) => accessChanged(leaseId),
  });
  const provisioner = made.provisioner;
  const closeProvisioner = (): Promise<void> => made.close();
  // Leases provisioned before a restart keep their SSH access from the
  // first moment, whether the exchange answers or not (D30).
  const directory = new LeaseDirectory<B>(ssh.idleBackend);
  try {
    for (const w of await provisioner.list()) {
      if (w.lease !== undefined && w.access !== undefined && !tombstones.has(w.leaseId)) {
        directory.ready(w.lease, w.access);
      }
    }
  } catch (err) {
    // The cluster's API cannot be read now: reconciliation finds the leases again.
    logger.warn({ err }, 'the workspaces could not be listed at start');
  }
  const gateway = await ssh.gatewayFactory({
    host: config.sshListen.host,
    port: config.sshListen.port,
    stateDir: join(config.stateDir, 'ssh'),
    directory,
    logger,
  });
  try {
    await gateway.start();
  } catch (err) {
    await closeProvisioner().catch(() => undefined);
    throw new AgentFatalError(
      `the SSH gateway cannot listen on GPUX_SSH_LISTEN ${config.sshListen.host}:${config.sshListen.port}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  const sshAddress = gateway.address();

  const exchange = new PacedExchange(
    deps.exchange ??
      new GrpcExchangeClient({
        target: config.exchangeTarget,
        tls: config.exchangeTls,
        token: config.token,
        deadlineMs: config.grpcDeadlineMs,
      }),
    { heartbeatIntervalMs: config.heartbeatIntervalMs, maxWaitMs: config.grpcDeadlineMs },
  );
  const worker = new LeaseWorker<B>({
    clusterId,
    exchange,
    provisioner,
    gateway,
    directory,
    tombstones,
    reports,
    advertiseHost: config.sshAdvertiseHost,
    logger,
    onLeaseEnded,
  });
  // A refreshed token: the lease's new kubeconfig goes the way the first one went.
  accessChanged = (leaseId) => {
    const lease = directory.leaseOf(leaseId);
    if (lease === undefined) return;
    worker.provision(lease, true).catch((err: unknown) => {
      logger.warn({ leaseId, err }, 'reporting the refreshed access failed; trying again in 30 s');
      setTimeout(() => accessChanged(leaseId), 30_000).unref();
    });
  };
  const reconciler = new Reconciler<B>({
    clusterId,
    exchange,
    provisioner,
    worker,
    tombstones,
    reports,
    logger,
  });
  const seller =
    config.askCents === undefined
      ? undefined
      : new Seller({
          clusterId,
          exchange,
          askCents: config.askCents,
          listHours: config.listHours,
          renewBeforeMs: config.sellRenewBeforeMs,
          logger,
        });
  return {
    provisioner,
    closeProvisioner,
    directory,
    gateway,
    sshAddress,
    exchange,
    worker,
    reconciler,
    seller,
  };
}
