// The agent (D29-D31), built in one place from its settings: its memory of
// leases, the provisioner PROVISIONER names, the SSH side (a session
// backend per leased node, the gateway), the exchange client, the
// heartbeat and the seller, the lease worker and the one queue all work on
// leases goes through, the reconciler, and the cluster's event stream; then
// agent-runtime.ts runs them. Every part is made once, after what it needs,
// and handed what it needs when it is made. `startAgent` is the
// programmatic entry: main.ts runs it as its own process; `gpux start` runs
// it in the exchange's process with the in-process bus injected.

import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';

import type { HostFacts } from '@gpux/proto';
import type { InProcessBus } from '@gpux/shared';

import { startRuntime } from './agent-runtime.js';
import type { AgentHandle } from './agent-runtime.js';
import type { AgentConfig, ExchangeTls } from './config.js';
import { AgentFatalError } from './errors.js';
import { BusEventStream } from './events/bus-event-stream.js';
import { NatsEventStream } from './events/nats-event-stream.js';
import { GrpcExchangeClient } from './exchange/exchange-client.js';
import type { ExchangeApi } from './exchange/exchange-client.js';
import { PacedExchange } from './exchange/paced-exchange.js';
import { Heartbeat } from './heartbeat.js';
import { readHostFacts } from './inventory/host-facts.js';
import type { GpuInventory } from './inventory/nvidia-smi.js';
import { LeaseDirectory } from './lease-directory.js';
import { LeaseQueue } from './leases/lease-queue.js';
import { LeaseWorker } from './leases/lease-worker.js';
import { AgentMetrics, serveMetrics } from './metrics.js';
import type { MetricsServer } from './metrics.js';
import type { Readiness } from './probes.js';
import { Reconciler } from './leases/reconciler.js';
import { SILENT_LOGGER } from './logger.js';
import type { Logger } from './logger.js';
import type { Workspace } from './provisioner/provisioner.js';
import { openProvisioner } from './provisioners.js';
import { Seller } from './selling/seller.js';
import { SessionBackends, sessionBackendOf } from './sessions.js';
import { SshGateway, loadOrCreateHostKey } from './ssh/index.js';
import { OwnSells } from './state/own-sells.js';
import { ReportMarks } from './state/report-marks.js';
import { Tombstones } from './state/tombstones.js';
import { TlsFilesWatcher, checkCertificates, checkKeyPair } from './tls-files.js';

export type { AgentHandle } from './agent-runtime.js';
export { AgentFatalError } from './errors.js';

export const AGENT_VERSION: string = (
  createRequire(import.meta.url)('../package.json') as { version: string }
).version;

/** What a caller may give instead of the real thing. */
export interface AgentDeps {
  readonly logger?: Logger;
  /** `gpux start`: events from the exchange's in-process bus instead of NATS. */
  readonly bus?: InProcessBus;
  /** Another way to reach the exchange than gRPC (tests). */
  readonly exchange?: ExchangeApi;
  /** The host's GPUs (simulated provisioner; tests). */
  readonly inventory?: () => Promise<GpuInventory>;
  readonly hostFacts?: () => Promise<HostFacts>;
}

export async function startAgent(config: AgentConfig, deps: AgentDeps = {}): Promise<AgentHandle> {
  const logger = deps.logger ?? SILENT_LOGGER;
  const { clusterId, stateDir } = config;
  if (config.natsUrl === undefined && deps.bus === undefined) {
    throw new AgentFatalError(
      "NATS_URL is required: the exchange's in-process bus is reachable only from `gpux start`",
    );
  }

  // 1. What the agent remembers across restarts: leases revoked here (D30)
  //    and reports the exchange answered.
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const tombstones = new Tombstones(stateDir, logger);
  const reports = new ReportMarks(stateDir, logger);
  const ownSells = new OwnSells(join(stateDir, 'sells.json'), logger);
  await tombstones.load();
  await reports.load();
  await ownSells.load();

  // 2. The provisioner, and what runs beside it (the admission webhook).
  const opened = await openProvisioner(config, { logger, inventory: deps.inventory });
  const { provisioner } = opened;

  // 3. The SSH side: a session backend per leased node, where the
  //    provisioner says its sessions run; who may log in where; the gateway.
  const sessions = new SessionBackends((target) => sessionBackendOf(target, logger));
  const directory = new LeaseDirectory(sessions);
  // Leases provisioned before a restart keep their SSH access from the first
  // moment, whether the exchange answers or not (D30).
  const restored: Workspace[] = [];
  try {
    for (const w of await provisioner.list()) {
      if (w.lease !== undefined && w.access !== undefined && !tombstones.has(w.leaseId)) {
        directory.ready(w.lease, w.access);
        restored.push(w);
      }
    }
  } catch (err) {
    // The cluster's API cannot be read now: reconciliation finds the leases again.
    logger.warn({ err }, 'the workspaces could not be listed at start');
  }
  const gateway = new SshGateway({
    host: config.sshListen.host,
    port: config.sshListen.port,
    hostKey: await loadOrCreateHostKey(join(stateDir, 'ssh'), logger),
    directory,
    logger,
    sftp: opened.sftp,
  });
  try {
    await gateway.start();
  } catch (err) {
    await opened.close().catch((e: unknown) => logger.warn({ err: e }, 'webhook not closed'));
    throw new AgentFatalError(
      `the SSH gateway cannot listen on GPUX_SSH_LISTEN ${config.sshListen.host}:${config.sshListen.port}: ${(err as Error).message}`,
      { cause: err },
    );
  }

  // 4. The exchange: every call goes through the pacing that keeps within
  //    its limits; what reaches the exchange is counted (GPUX_METRICS_LISTEN).
  const metrics = new AgentMetrics();
  const grpc =
    deps.exchange === undefined
      ? new GrpcExchangeClient({
          target: config.exchangeTarget,
          tls: config.exchangeTls,
          token: config.token,
          deadlineMs: config.grpcDeadlineMs,
        })
      : undefined;
  // Renewed TLS files: the next calls go over a channel with them (issue 23).
  const renewals =
    grpc === undefined || config.exchangeTls === undefined
      ? undefined
      : watchExchangeTls(grpc, config.exchangeTls, logger);
  const exchange = new PacedExchange(
    metrics.instrument(deps.exchange ?? (grpc as GrpcExchangeClient)),
    { heartbeatIntervalMs: config.heartbeatIntervalMs, maxWaitMs: config.grpcDeadlineMs },
  );

  // 5. Selling the free nodes (GPUX_ASK_PRICE), a round after each heartbeat;
  //    without a price, the same rounds withdraw the sells it listed itself.
  const seller = new Seller({
    clusterId,
    exchange,
    askCents: config.askCents,
    ownSells,
    listHours: config.listHours,
    renewBeforeMs: config.sellRenewBeforeMs,
    leasedHostnames: () => directory.leasedHostnames(),
    logger,
  });
  const heartbeat = new Heartbeat({
    clusterId,
    exchange,
    provisioner,
    intervalMs: config.heartbeatIntervalMs,
    seller,
    logger,
  });

  // 6. The work on leases: the worker's steps, one queue for all of it, the reconciler.
  const worker = new LeaseWorker({
    clusterId,
    exchange,
    provisioner,
    gateway,
    sessions,
    directory,
    tombstones,
    reports,
    advertiseHost: config.sshAdvertiseHost,
    logger,
    // Its nodes are free again: a heartbeat soon shows them, and the seller lists them.
    onLeaseEnded: () => heartbeat.nudge(),
    observe: metrics.leaseObserver,
  });
  const leases = new LeaseQueue({ worker, logger });
  // Their tokens are refreshed in time (D28), whether the exchange answers yet or not.
  for (const w of restored) {
    const due = w.access?.refreshAtMs;
    if (w.lease !== undefined && due !== undefined) leases.refreshAt(w.lease, due);
  }
  const reconciler = new Reconciler({
    clusterId,
    exchange,
    provisioner,
    leases,
    tombstones,
    reports,
    logger,
    onResult: (r) => metrics.reconciled(r),
  });

  // GET /metrics and the probes, when GPUX_METRICS_LISTEN says where; not
  // ready until the runtime below says so (probes.ts).
  let readiness = (): Readiness => ({
    phase: 'attaching',
    checks: { exchange: 'not attached yet', events: 'not consuming yet', provisioner: 'ok' },
  });
  let served: MetricsServer | undefined;
  if (config.metricsListen !== undefined) {
    const listen = config.metricsListen;
    try {
      served = await serveMetrics(metrics, listen, {
        before: () => metrics.sshSessions.set(gateway.openSessions),
        readiness: () => readiness(),
      });
    } catch (err) {
      await gateway.close();
      await opened.close().catch((e: unknown) => logger.warn({ err: e }, 'webhook not closed'));
      throw new AgentFatalError(
        `GET /metrics cannot listen on GPUX_METRICS_LISTEN ${listen.host}:${listen.port}: ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  // 7. Run: attach, heartbeat, reconcile, consume the cluster's events (agent-runtime.ts).
  const bus = deps.bus;
  const handle = startRuntime({
    config,
    logger,
    agentVersion: AGENT_VERSION,
    exchange,
    heartbeat,
    seller,
    leases,
    reconciler,
    directory,
    ssh: { address: gateway.address(), hostKey: gateway.hostKey },
    hostFacts: deps.hostFacts ?? readHostFacts,
    openEvents: async (source, recreate) =>
      bus === undefined
        ? NatsEventStream.connect({
            url: config.natsUrl ?? '',
            creds: config.natsCreds,
            source,
            name: `gpux-agent-${clusterId}`,
            logger,
            recreate,
          })
        : new BusEventStream(bus, {
            consumer: source.consumer,
            filterSubject: source.filterSubject,
          }),
    close: async () => {
      renewals?.close();
      await served?.close();
      await gateway.close();
      await opened.close();
      exchange.close();
    },
  });
  readiness = () => handle.readiness();
  return handle;
}

/**
 * Watches GPUX_GRPC_CA_FILE, GPUX_GRPC_CERT_FILE and GPUX_GRPC_KEY_FILE; a
 * new set that holds together replaces the client's channel.
 */
function watchExchangeTls(
  grpc: GrpcExchangeClient,
  tls: ExchangeTls,
  logger: Logger,
): TlsFilesWatcher<string> | undefined {
  const files: Record<string, string> = {};
  const initial: Record<string, Buffer> = {};
  for (const [k, path, pem] of [
    ['ca', tls.files?.ca, tls.caPem],
    ['cert', tls.files?.cert, tls.certPem],
    ['key', tls.files?.key, tls.keyPem],
  ] as const) {
    if (path === undefined || pem === undefined) continue;
    files[k] = path;
    initial[k] = pem;
  }
  if (Object.keys(files).length === 0) return undefined;
  const watcher = new TlsFilesWatcher({
    name: 'the gRPC TLS files (GPUX_GRPC_CA_FILE, GPUX_GRPC_CERT_FILE, GPUX_GRPC_KEY_FILE)',
    files,
    initial,
    apply: (p) => {
      const [caPem, certPem, keyPem] = [p['ca'], p['cert'], p['key']];
      if (caPem !== undefined) checkCertificates(caPem);
      if (certPem !== undefined && keyPem !== undefined) checkKeyPair(certPem, keyPem);
      grpc.useTls({ caPem, certPem, keyPem });
    },
    logger,
  });
  watcher.start();
  return watcher;
}
