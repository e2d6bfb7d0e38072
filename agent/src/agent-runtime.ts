// The agent's life once its parts are made (agent.ts makes them): attach to
// the exchange (trying again while it cannot be reached), heartbeat,
// reconcile once, then consume the cluster's lease events, reconciling every
// few seconds; status.json rewritten every heartbeat interval and after each
// reconciliation; stop() drains within the drain deadline (D34): no new
// events, lease work in flight gets until the deadline, what is left
// unfinished is handed back (events) and found again by reconciliation at
// the next start (D30).

import { join } from 'node:path';

import type { AttachResponse, EventSource, HostFacts } from '@gpux/proto';
import { NodeStatus } from '@gpux/proto';

import type { AgentPhase, AgentStatus } from './agent-status.js';
import type { AgentConfig } from './config.js';
import { AgentFatalError } from './errors.js';
import { handleEvent } from './events/event-handler.js';
import type { EventStream, EventSubscription } from './events/event-stream.js';
import { ExchangeError, isTransient } from './exchange/exchange-client.js';
import type { PacedExchange } from './exchange/paced-exchange.js';
import type { Heartbeat } from './heartbeat.js';
import type { LeaseDirectory } from './lease-directory.js';
import type { LeaseQueue } from './leases/lease-queue.js';
import type { ReconcileResult, Reconciler } from './leases/reconciler.js';
import { backoffMs } from './leases/work-queue.js';
import type { Logger } from './logger.js';
import { OK } from './probes.js';
import type { Readiness } from './probes.js';
import type { Seller } from './selling/seller.js';
import { writeFileAtomic } from './state/atomic-file.js';
import { Ticker } from './ticker.js';

export interface AgentHandle {
  /** Attached, reconciled once and consuming events; rejects if the agent failed before. */
  readonly ready: Promise<void>;
  /** Resolves when stopped; rejects with AgentFatalError when the agent stopped by itself. */
  readonly done: Promise<void>;
  status(): AgentStatus;
  /** What GET /readyz answers (probes.ts). */
  readiness(): Readiness;
  /**
   * Drains: no new events; lease work in flight gets until the drain
   * deadline (GPUX_DRAIN_TIMEOUT_SECONDS), the rest is left to the next start; then
   * everything closes.
   */
  stop(): Promise<void>;
}

/** What the runtime runs, made by agent.ts. */
export interface AgentParts {
  readonly config: AgentConfig;
  readonly logger: Logger;
  readonly agentVersion: string;
  readonly exchange: PacedExchange;
  readonly heartbeat: Heartbeat;
  readonly seller: Seller | undefined;
  readonly leases: LeaseQueue;
  readonly reconciler: Reconciler;
  readonly directory: LeaseDirectory;
  readonly ssh: {
    /** Where the gateway listens (kept: a closed gateway has no address). */
    readonly address: { readonly host: string; readonly port: number };
    readonly hostKey: { readonly fingerprint: string } | undefined;
  };
  readonly hostFacts: () => Promise<HostFacts>;
  /**
   * The cluster's event stream, from Attach's answer; `recreate` asks the
   * exchange to make its consumer again (Attach once more), for a NATS
   * server that lost its data.
   */
  readonly openEvents: (source: EventSource, recreate: () => Promise<void>) => Promise<EventStream>;
  /** Closes the gateway, the provisioner's side and the exchange client, in that order. */
  readonly close: () => Promise<void>;
}

/** How long the closing steps after the drain may take at least (connections, listeners). */
const CLOSE_GRACE_MS = 5_000;

/** Resolves when `p` settles or after `ms`, whichever is first: true if it settled. */
async function within(p: Promise<unknown> | undefined, ms: number): Promise<boolean> {
  if (p === undefined) return true;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const settled = p.then(
    () => true,
    () => true,
  );
  const r = await Promise.race([settled, late]);
  clearTimeout(timer);
  return r;
}

export function startRuntime(parts: AgentParts): AgentHandle {
  const { config, logger, exchange, heartbeat, seller, leases, reconciler, directory } = parts;
  const clusterId = config.clusterId;
  let phase: AgentPhase = 'attaching';
  let fatal: string | undefined;
  let lastReconcile: ReconcileResult | undefined;
  const inFlight = new Set<Promise<void>>();
  let events: EventStream | undefined;
  let subscription: EventSubscription | undefined;
  const stopping = new AbortController();

  const status = (): AgentStatus => {
    const { host, port } = parts.ssh.address;
    return {
      phase,
      clusterId,
      provisioner: config.provisioner,
      fatal,
      lastHeartbeat: heartbeat.last,
      nodes: heartbeat.nodes.map((n) => ({
        hostname: n.hostname,
        status: NodeStatus[n.status] ?? String(n.status),
        leaseId: n.leaseId,
      })),
      selling: seller?.status,
      exchange: exchange.status(),
      lastReconcile,
      leases: directory.size,
      eventsInFlight: inFlight.size,
      leaseWork: leases.size,
      ssh: {
        address: `${host.includes(':') ? `[${host}]` : host}:${port}`,
        hostKeyFingerprint: parts.ssh.hostKey?.fingerprint,
      },
    };
  };
  let attached = false;
  /** Ready: attached and heard by the exchange, consuming events, the provisioner answering. */
  const readiness = (): Readiness => {
    const beat = heartbeat.last;
    const failed = beat?.ok === false ? beat.failed : undefined;
    return {
      phase,
      checks: {
        exchange: !attached
          ? 'not attached yet'
          : failed === 'exchange'
            ? `the last heartbeat was not answered: ${beat?.error ?? ''}`
            : OK,
        events: events === undefined ? 'not consuming yet' : (events.problem() ?? OK),
        provisioner:
          failed === 'provisioner'
            ? `the nodes' health could not be read: ${beat?.error ?? ''}`
            : OK,
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
  const statusTicker = new Ticker(config.heartbeatIntervalMs, writeStatus);

  const reconcile = new Ticker(config.reconcileIntervalMs, async () => {
    try {
      lastReconcile = await reconciler.run();
    } catch (err) {
      // The workspaces could not be listed (the cluster's API): tried again next time.
      logger.error({ err }, 'reconciliation failed');
      const error = err instanceof Error ? err.message : String(err);
      lastReconcile = {
        atMs: Date.now(),
        ok: false,
        error,
        revoked: 0,
        provisioned: 0,
        reported: 0,
        failures: 1,
      };
    }
    await writeStatus();
  });

  /** One Attach; its nodes learnt. */
  const attachOnce = async (): Promise<AttachResponse> => {
    const sentAtMs = Date.now();
    const res = await exchange.attach({
      clusterId,
      heartbeatIntervalSeconds: config.heartbeatIntervalMs / 1000,
      agentVersion: parts.agentVersion,
      provisioner: config.provisioner,
      host: await parts.hostFacts(),
    });
    if (res.events === undefined) {
      throw new AgentFatalError('Attach answered without an event source');
    }
    heartbeat.learn(res.nodes, sentAtMs);
    attached = true;
    return res;
  };

  /**
   * The event consumer is gone (NATS lost its data): Attach again, which
   * makes it (and the stream) again on the exchange's side, as at the
   * first Attach. An error is tried again by the event stream.
   */
  const recreateConsumer = async (): Promise<void> => {
    await attachOnce();
    logger.info({ clusterId }, 'attached again: the exchange made the event consumer again');
  };

  /** Attach, trying again while the exchange cannot be reached; undefined when stopped meanwhile. */
  const attach = async (): Promise<AttachResponse | undefined> => {
    for (let attempt = 1; !stopping.signal.aborted; attempt++) {
      try {
        const res = await attachOnce();
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
        return res;
      } catch (err) {
        if (err instanceof AgentFatalError) throw err;
        if (!isTransient(err)) {
          throw new AgentFatalError(`the exchange refused ${(err as Error).message}`, {
            cause: err,
          });
        }
        // The retry policy of all the agent's work; a limit's answer says how long at least.
        const asked = err instanceof ExchangeError ? (err.retryAfterMs ?? 0) : 0;
        const waitMs = Math.max(asked, backoffMs(attempt));
        logger.warn({ err, waitMs }, 'attach failed; trying again');
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, waitMs);
          stopping.signal.addEventListener('abort', () => {
            clearTimeout(t);
            resolve();
          });
        });
      }
    }
    return undefined;
  };

  const startUp = async (): Promise<void> => {
    const attached = await attach();
    if (stopping.signal.aborted || attached?.events === undefined) return;
    heartbeat.start();
    statusTicker.start();
    await reconcile.runNow();
    if (stopping.signal.aborted) return;
    const stream = await parts.openEvents(attached.events, recreateConsumer);
    // Stopped while connecting: the drain has run already and did not see it.
    if (stopping.signal.aborted) {
      await stream.close();
      return;
    }
    events = stream;
    subscription = await stream.consume((m) => {
      const p = handleEvent(m, {
        clusterId,
        leases,
        logger,
        endOf: (leaseId) => directory.leaseOf(leaseId)?.endMs,
      }).finally(() => inFlight.delete(p));
      inFlight.add(p);
    });
    if (stopping.signal.aborted) {
      await subscription.stop();
      await stream.close();
      return;
    }
    phase = 'running';
    logger.info(
      { stream: attached.events.stream, consumer: attached.events.consumer },
      'consuming lease events',
    );
  };

  let closing: Promise<void> | undefined;
  const shutDown = (): Promise<void> => (closing ??= closeAll());
  const closeAll = async (): Promise<void> => {
    stopping.abort();
    const deadlineAt = Date.now() + config.drainTimeoutMs;
    const left = (): number => Math.max(0, deadlineAt - Date.now());
    // Stop taking events first; then let what was taken finish, within the deadline (D34).
    await within(subscription?.stop(), left());
    const [drained] = await Promise.all([
      leases.drain(left()),
      within(heartbeat.stop(), left()),
      within(reconcile.stop(), left()),
    ]);
    // Their work done or given up: the events are acked or handed back now.
    await within(Promise.allSettled([...inFlight]), Math.max(left(), 1_000));
    if (drained.unfinished > 0) {
      logger.warn(
        { leases: drained.unfinished, drainTimeoutMs: config.drainTimeoutMs },
        'stopped with lease work unfinished; reconciliation takes it up at the next start',
      );
    }
    await statusTicker.stop();
    const grace = Math.max(left(), CLOSE_GRACE_MS);
    if (!(await within(events?.close(), grace)))
      logger.warn('the event stream did not close in time');
    if (!(await within(parts.close(), grace))) logger.warn('the agent did not close in time');
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
  // A failure of `ready` is logged above ('agent failed') and rejects `done`,
  // which whoever holds the handle awaits: it must not also be an unhandled rejection.
  ready.catch((_err: unknown) => undefined);

  let stopPromise: Promise<void> | undefined;
  return {
    ready,
    done,
    status,
    readiness,
    stop: () => {
      stopPromise ??= (async () => {
        if (phase !== 'failed') phase = 'draining';
        logger.info({ drainTimeoutMs: config.drainTimeoutMs }, 'draining');
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
