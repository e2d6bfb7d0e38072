// The agent (docs/architecture.md flows 2-4, D29-D31): attach to the exchange,
// heartbeat with node health, keep free nodes listed, consume the cluster's
// lease events, reconcile at start and every few seconds, drain on stop.
// `startAgent` is the programmatic entry: main.ts runs it as its own
// process; `gpux start` runs it in the exchange's process with the
// in-process bus injected.

import { join } from 'node:path';
import { createRequire } from 'node:module';

import type { AttachResponse, EventSource, Node } from '@gpux/proto';
import { NodeStatus } from '@gpux/proto';

import type { AgentPhase, AgentStatus } from './agent-status.js';
import { assembleAgent, simulatedProvisioner } from './assemble.js';
import { AgentFatalError } from './errors.js';
import type { AgentDeps, AgentSsh, ProvisionerFactory } from './assemble.js';
import type { AgentConfig } from './config.js';
import { handleEvent } from './events/event-handler.js';
import { BusEventStream } from './events/bus-event-stream.js';
import type { EventStream, EventSubscription } from './events/event-stream.js';
import { NatsEventStream } from './events/nats-event-stream.js';
import { ExchangeError, isRefusedAsIs, isTransient } from './exchange/exchange-client.js';
import { HEARTBEAT_GAP } from './exchange/paced-exchange.js';
import { readHostFacts } from './inventory/host-facts.js';
import type { ReconcileResult } from './leases/reconciler.js';
import { SILENT_LOGGER } from './logger.js';
import type { TerminableBackend } from './provisioner/simulated-provisioner.js';
import { kubernetesAgent } from './kubernetes-agent.js';
import { localWorkspaceSsh } from './local-ssh.js';
import { writeFileAtomic } from './state/atomic-file.js';
import { Ticker } from './ticker.js';

export type { AgentDeps, AgentSsh } from './assemble.js';
export { AgentFatalError } from './errors.js';

export const AGENT_VERSION: string = (
  createRequire(import.meta.url)('../package.json') as { version: string }
).version;

export interface AgentHandle {
  /** Attached, reconciled once and consuming events; rejects if the agent failed before. */
  readonly ready: Promise<void>;
  /** Resolves when stopped; rejects with AgentFatalError when the agent stopped by itself. */
  readonly done: Promise<void>;
  status(): AgentStatus;
  /** Drains: no new events, work in flight finishes, then everything closes. */
  stop(): Promise<void>;
}

export async function startAgent<B extends TerminableBackend>(
  config: AgentConfig,
  deps: AgentDeps<B> = {},
): Promise<AgentHandle> {
  const { ssh, ...rest } = deps;
  if (config.provisioner === 'kubernetes') {
    // Its own gateway: sessions exec into the lease's workspace pods (deps.ssh is not used).
    const k = kubernetesAgent(config, deps.logger ?? SILENT_LOGGER);
    return run(config, rest, k.ssh, k.makeProvisioner);
  }
  // The simulated provisioner's own gateway unless another is given (tests).
  return ssh === undefined
    ? run(config, rest, localWorkspaceSsh(config.stateDir))
    : run(config, rest, ssh);
}

async function run<B extends TerminableBackend>(
  config: AgentConfig,
  deps: Omit<AgentDeps<B>, 'ssh'>,
  ssh: AgentSsh<B>,
  makeProvisioner?: ProvisionerFactory<B>,
): Promise<AgentHandle> {
  const logger = deps.logger ?? SILENT_LOGGER;
  if (config.natsUrl === undefined && deps.bus === undefined) {
    throw new AgentFatalError(
      "NATS_URL is required: the exchange's in-process bus is reachable only from `gpux start`",
    );
  }
  const clusterId = config.clusterId;
  let leaseEndedNudge = (): void => undefined;
  const {
    provisioner,
    closeProvisioner,
    directory,
    gateway,
    sshAddress,
    exchange,
    worker,
    reconciler,
    seller,
  } = await assembleAgent(
    config,
    deps,
    ssh,
    logger,
    () => leaseEndedNudge(),
    makeProvisioner ?? simulatedProvisioner(config, deps, ssh, logger),
  );

  let phase: AgentPhase = 'attaching';
  let fatal: string | undefined;
  let nodes: readonly Node[] = [];
  let lastHeartbeat: AgentStatus['lastHeartbeat'];
  let lastReconcile: ReconcileResult | undefined;
  const inFlight = new Set<Promise<void>>();
  let events: EventStream | undefined;
  let subscription: EventSubscription | undefined;
  const stopping = new AbortController();

  const status = (): AgentStatus => {
    const hostKey = gateway.hostKey;
    const { host, port } = sshAddress;
    return {
      phase,
      clusterId,
      provisioner: config.provisioner,
      fatal,
      lastHeartbeat,
      nodes: nodes.map((n) => ({
        hostname: n.hostname,
        status: NodeStatus[n.status] ?? String(n.status),
        leaseId: n.leaseId,
      })),
      selling: seller?.status,
      exchange: exchange.status(),
      lastReconcile,
      leases: directory.size,
      eventsInFlight: inFlight.size,
      ssh: {
        address: `${host.includes(':') ? `[${host}]` : host}:${port}`,
        hostKeyFingerprint: hostKey?.fingerprint,
      },
    };
  };
  const writeStatus = async (): Promise<void> => {
    try {
      await writeFileAtomic(
        join(config.stateDir, 'status.json'),
        `${JSON.stringify(status(), null, 2)}\n`,
        0o644,
      );
    } catch (err) {
      logger.warn({ err }, 'status.json could not be written');
    }
  };

  const learnNodes = (latest: readonly Node[]): void => {
    nodes = latest;
    provisioner.setClusterNodes(latest.map((n) => n.hostname));
  };

  let attached: AttachResponse | undefined;
  const attach = async (): Promise<AttachResponse> => {
    const host = await (deps.hostFacts ?? readHostFacts)();
    const res = await exchange.attach({
      clusterId,
      heartbeatIntervalSeconds: config.heartbeatIntervalMs / 1000,
      agentVersion: AGENT_VERSION,
      provisioner: config.provisioner,
      host,
    });
    if (res.events === undefined) {
      throw new AgentFatalError('Attach answered without an event source');
    }
    learnNodes(res.nodes);
    logger.info(
      {
        clusterId,
        gpuType: res.gpuType,
        zone: res.zone,
        nodes: res.nodes.length,
        offlineAfterSeconds: res.offlineAfterSeconds,
      },
      'attached to the exchange',
    );
    attached = res;
    return res;
  };

  const sellerTicker =
    seller === undefined
      ? undefined
      : new Ticker(config.heartbeatIntervalMs, async () => {
          await seller.tick(nodes);
          await writeStatus();
        });

  // Nudged runs (a lease ended) at most one more per interval than the
  // schedule: the exchange allows two heartbeats per declared interval.
  const heartbeatEvery = { minGapMs: config.heartbeatIntervalMs * HEARTBEAT_GAP };
  const heartbeat = new Ticker(
    config.heartbeatIntervalMs,
    async () => {
      try {
        const health = await provisioner.health();
        const res = await exchange.heartbeat({ clusterId, nodes: health });
        learnNodes(res.nodes);
        lastHeartbeat = { atMs: Date.now(), ok: true };
        // The seller's round follows the heartbeat that showed which nodes are free.
        void sellerTicker?.runNow();
      } catch (err) {
        const error = err instanceof Error ? err.message : String(err);
        lastHeartbeat = { atMs: Date.now(), ok: false, error };
        if (!isRefusedAsIs(err)) logger.warn({ err }, 'heartbeat failed');
        else if (!err.repeated) {
          // The next heartbeats are sent on schedule (fresh state, not this request again).
          logger.error({ err, refusal: err.details }, 'the exchange refused the heartbeat');
        }
      }
      await writeStatus();
    },
    heartbeatEvery,
  );

  // A lease ended: a heartbeat soon shows its nodes free, and the seller lists them.
  leaseEndedNudge = () => heartbeat.nudge();

  const reconcile = new Ticker(config.reconcileIntervalMs, async () => {
    lastReconcile = await reconciler.run().catch((err: unknown) => {
      logger.error({ err }, 'reconciliation failed');
      const error = err instanceof Error ? err.message : String(err);
      return {
        atMs: Date.now(),
        ok: false,
        error,
        revoked: 0,
        provisioned: 0,
        reported: 0,
        failures: 1,
      };
    });
    await writeStatus();
  });

  const openEvents = async (source: EventSource): Promise<EventStream> => {
    if (deps.bus !== undefined) {
      return new BusEventStream(deps.bus, {
        consumer: source.consumer,
        filterSubject: source.filterSubject,
      });
    }
    return NatsEventStream.connect({
      url: config.natsUrl ?? '',
      creds: config.natsCreds,
      source,
      name: `gpux-agent-${clusterId}`,
      logger,
    });
  };

  const startUp = async (): Promise<void> => {
    // Attach, trying again while the exchange cannot be reached.
    for (let attempt = 1; ; attempt++) {
      try {
        await attach();
        break;
      } catch (err) {
        if (err instanceof AgentFatalError) throw err;
        if (!isTransient(err)) {
          throw new AgentFatalError(`the exchange refused ${(err as Error).message}`, {
            cause: err,
          });
        }
        // A limit's answer says how long to wait (paced-exchange.ts holds attaches back till then).
        const asked = err instanceof ExchangeError ? (err.retryAfterMs ?? 0) : 0;
        const waitMs = Math.max(asked, Math.min(30_000, 500 * 2 ** Math.min(attempt, 6)));
        logger.warn({ err, waitMs }, 'attach failed; trying again');
        await new Promise((resolve) => {
          const t = setTimeout(resolve, waitMs);
          stopping.signal.addEventListener('abort', () => {
            clearTimeout(t);
            resolve(undefined);
          });
        });
        if (stopping.signal.aborted) return;
      }
    }
    if (stopping.signal.aborted || attached?.events === undefined) return;
    heartbeat.start();
    await reconcile.runNow();
    if (stopping.signal.aborted) return;
    const stream = await openEvents(attached.events);
    // Stopped while connecting: the drain has run already and did not see it.
    if (stopping.signal.aborted) {
      await stream.close();
      return;
    }
    events = stream;
    subscription = await stream.consume((m) => {
      const p = handleEvent(m, {
        clusterId,
        worker,
        logger,
        endOf: (leaseId) => directory.leaseOf(leaseId)?.endMs,
      }).finally(() => inFlight.delete(p));
      inFlight.add(p);
    });
    if (stopping.signal.aborted) {
      await subscription.stop().catch(() => undefined);
      await stream.close().catch(() => undefined);
      return;
    }
    phase = 'running';
    logger.info(
      { stream: attached.events.stream, consumer: attached.events.consumer },
      'consuming lease events',
    );
  };

  let stopPromise: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  const shutDown = (): Promise<void> => (closing ??= closeAll());
  const closeAll = async (): Promise<void> => {
    stopping.abort();
    // Stop taking events first; then let what was taken finish (D34 drain).
    await subscription?.stop();
    await heartbeat.stop();
    await reconcile.stop();
    await sellerTicker?.stop();
    await Promise.allSettled([...inFlight]);
    await events?.close();
    await gateway.close();
    await closeProvisioner();
    exchange.close();
  };

  let resolveDone!: () => void;
  let rejectDone!: (err: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  const ready = startUp().then(
    () => {
      if (stopping.signal.aborted)
        throw new AgentFatalError('the agent was stopped before it was ready');
    },
    async (err: unknown) => {
      // Stopping made it fail (a connection closed under it): stop() is in charge.
      if (stopping.signal.aborted) throw err;
      phase = 'failed';
      fatal = err instanceof Error ? err.message : String(err);
      logger.error({ err }, 'agent failed');
      await shutDown().catch((e: unknown) => logger.error({ err: e }, 'shutdown failed'));
      await writeStatus();
      rejectDone(err);
      throw err;
    },
  );
  // Whoever holds the handle awaits `done`; `ready` must not be an unhandled rejection.
  ready.catch(() => undefined);

  return {
    ready,
    done,
    status,
    stop: () => {
      stopPromise ??= (async () => {
        if (phase !== 'failed') phase = 'draining';
        logger.info('draining');
        await shutDown();
        if (phase !== 'failed') phase = 'stopped';
        await writeStatus();
        logger.info('stopped');
        resolveDone();
      })();
      return stopPromise;
    },
  };
}
