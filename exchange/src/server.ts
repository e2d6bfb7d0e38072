// The running exchange: what `gpux exchange` (main.ts) and `gpux start`
// (cli/, with a simulated agent in the same process) both start.
//
// Exactly one process writes a database's market (docs/ownership.md). At
// start every process opens the database, checks the migrations and
// listens (HTTP and the agents' gRPC service); then it either owns the
// market at once or stands by (503 to customers, /readyz false) until the
// owner's lease lapses or it hands over. Only as the owner does it apply
// migrations, release abandoned Idempotency-Key claims, rebuild the books
// (docs/architecture.md flow 5), relay the outbox to NATS JetStream or the
// in-process bus, sweep silent nodes (D29) and seed the demo data: the owned
// part (owned-part.ts), stopped again when the market is lost or the process
// drains (D34).

import { mkdirSync, readFileSync, readlinkSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';

import { GpuxError, InProcessBus } from '@gpux/shared';
import type { FastifyInstance } from 'fastify';
import type { Logger as PinoLogger } from 'pino';

import { Directory } from './accounts/directory.js';
import { offerDemoNodes } from './accounts/demo-sells.js';
import { AccountStreams } from './account-events/account-streams.js';
import { buildApp } from './app.js';
import { ExchangeMetrics } from './metrics/exchange-metrics.js';
import { newApiToken } from './auth/tokens.js';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { checkMigrations, isApplied, migrate } from './db/migrate.js';
import { openEmbedded } from './db/pglite.js';
import { openPostgres } from './db/postgres.js';
import { SecretBox, loadOrCreateSecretKey } from './leases/secret-box.js';
import { checkSecretKeys } from './leases/secret-check.js';
import type { Logger } from './logger.js';
import { captureWrites } from './market/capture.js';
import type { Market } from './market/market.js';
import { MarketOwnership } from './market/ownership.js';
import type { Holder } from './market/ownership.js';
import { Steward } from './market/steward.js';
import { openAgentDatabase } from './providers/agent-database.js';
import { inThisThread, startAgentServer } from './providers/grpc-server.js';
import { MarketBackend } from './providers/agent-backend.js';
import { startAgentHost } from './providers/agent-host.js';
import type { AgentHost } from './providers/agent-host.js';
import type { ProviderContext } from './providers/provider-context.js';
import { startOwnedPart } from './owned-part.js';
import type { Owned } from './owned-part.js';

export type { Owned } from './owned-part.js';

export interface ExchangeOptions {
  /** The app's pino logger: Fastify logs requests with it, every part of the exchange its own records. */
  readonly logger: PinoLogger;
  /**
   * The in-process bus to publish to when NATS_URL is unset (`gpux start`
   * hands the same bus to its agent); default: one of the exchange's own.
   */
  readonly bus?: InProcessBus | undefined;
  /**
   * On the demo data: offer two demo nodes for sale, so there is something to
   * buy when no agent lists them (`gpux exchange`; `gpux start`'s agent lists
   * its free nodes itself).
   */
  readonly demoSells?: boolean;
  /**
   * Another process owns the market: this one stands by (once per spell of
   * standing by, with the owner and this process's own URL).
   */
  readonly onStandby?: (holder: Holder, url: string, grpcPort: number) => void;
  /**
   * Something this process cannot go on without stopped (the agents' gRPC
   * process): the caller drains and exits. Unset: it is logged.
   */
  readonly onFatal?: (err: Error) => void;
}

export interface Exchange {
  readonly url: string;
  readonly grpcPort: number;
  readonly adminToken: string;
  /** The bus events go to when NATS_URL is unset. */
  readonly bus: InProcessBus | undefined;
  readonly app: FastifyInstance;
  readonly db: Database;
  /**
   * Resolves the first time this process owns the market and serves: at
   * once when no other process owns it, else when it takes over (a standby
   * first, ExchangeOptions.onStandby). Rejects when starting the owned part
   * failed (the process should exit), or the exchange drained before.
   */
  readonly owned: Promise<Owned>;
  /** Does this process own the market and serve now? */
  serving(): boolean;
  /** Has drain() begun? */
  closing(): boolean;
  /** The market while this process owns it; `unavailable` (503) otherwise. */
  readonly market: Market;
  /**
   * D34: no new requests, running ones finish (their answers carry
   * `Connection: close`, new ones get 503), what is still open after
   * `timeoutMs` is closed; then the owned part stops and the market is
   * released for a standby to take at once.
   */
  drain(timeoutMs: number): Promise<{ forced: boolean }>;
}

function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** D34: PostgreSQL when DATABASE_URL is set, else PGlite on disk under GPUX_DATA_DIR. */
export async function openDatabase(config: Config, logger: Logger): Promise<Database> {
  const opened =
    config.databaseUrl !== undefined
      ? openPostgres(config.databaseUrl, 10, logger)
      : await openEmbedded(config.dataDir);
  if (config.captureWritesFile === undefined) return opened;
  logger.warn(
    { file: config.captureWritesFile },
    'every write batch is also appended to GPUX_CAPTURE_WRITES',
  );
  return captureWrites(opened, config.captureWritesFile);
}

/** D28: GPUX_SECRET_KEY, else a key made once and kept under GPUX_DATA_DIR. */
export function secretsOf(config: Config, logger: Logger): SecretBox {
  if (config.secretKey !== undefined) return new SecretBox(config.secretKey);
  mkdirSync(config.dataDir, { recursive: true });
  const file = join(config.dataDir, 'secret.key');
  if (config.databaseUrl !== undefined) {
    logger.warn(
      { file },
      'GPUX_SECRET_KEY is unset: kubeconfigs are sealed with a key kept in this file; every exchange process on this database needs the same key',
    );
  }
  return new SecretBox(loadOrCreateSecretKey(file));
}

/** How often a standby looks whether the owner's lease lapsed (docs/ownership.md). */
const STANDBY_POLL_MS = 250;

/** The last migration the ownership record needs (0013, 0014): before it, nobody can own the market. */
const OWNERSHIP_MIGRATION = 14;

/**
 * This machine's boot and pid namespace: where a pid names one process (two
 * containers may share a host name, each with its own pids). Null where
 * /proc does not tell.
 */
function hostKey(): string | null {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    return `${boot}/${readlinkSync('/proc/self/ns/pid')}`;
  } catch {
    return null;
  }
}

const HOST_KEY = hostKey();

/** Is a process of this machine and pid namespace gone (a restart after a crash may take its books at once)? */
function goneFromThisHost(holder: Holder): boolean {
  if (HOST_KEY === null || holder.hostKey !== HOST_KEY || holder.pid === null) return false;
  if (holder.pid === process.pid) return true;
  try {
    process.kill(holder.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

const notOwner = (): GpuxError =>
  new GpuxError(
    'unavailable',
    'this exchange process does not own the market now (a standby); retry shortly',
  );

export async function startExchange(config: Config, o: ExchangeOptions): Promise<Exchange> {
  const { logger } = o;
  const db = await openDatabase(config, logger);
  const stops: (() => Promise<void>)[] = [() => db.close()];
  const stopAll = async (): Promise<void> => {
    for (const stop of stops.reverse()) await stop();
  };
  try {
    // An edited migration stops any process at once, standby or not. Before
    // the ownership table exists nobody can own the market: migrate now.
    await checkMigrations(db);
    const appliedAtStart = (await isApplied(db, OWNERSHIP_MIGRATION)) ? [] : await migrate(db);
    const secrets = secretsOf(config, logger);
    // D28: a key that opens nothing stored stops the start here, not as 500s later.
    const keys = await checkSecretKeys(db, secrets);
    if (keys.opened < keys.tried)
      logger.warn(keys, 'some stored kubeconfigs open under none of the secret keys');
    const adminToken = config.adminToken ?? newApiToken();
    const bus = config.natsUrl === undefined ? (o.bus ?? new InProcessBus()) : undefined;

    // The ownership's own connection, its queries bounded by half a lease:
    // a renewal neither waits behind the market's traffic nor hangs on a
    // connection that went silent (docs/ownership.md).
    const ownershipDb =
      config.databaseUrl !== undefined && db.kind === 'postgres'
        ? openPostgres(config.databaseUrl, 1, logger, {
            queryTimeoutMs: Math.floor(config.ownerLeaseMs / 2),
          })
        : db;
    if (ownershipDb !== db) stops.push(() => ownershipDb.close());
    const ownership = new MarketOwnership(
      ownershipDb,
      {
        instanceId: config.instanceId,
        host: hostname(),
        hostKey: HOST_KEY,
        pid: process.pid,
        url: undefined,
      },
      { leaseMs: config.ownerLeaseMs, isGone: goneFromThisHost },
    );
    // Set below, once the app and the gRPC service it serves through exist;
    // until then nothing is served.
    const role: { steward?: Steward<Owned> } = {};
    const serving = (): boolean => role.steward?.serving() === true;
    const owned = (): Owned => {
      const current = role.steward?.current();
      if (current === undefined) throw notOwner();
      return current;
    };

    // The agents' calls have PostgreSQL connections of their own (issue 18).
    // On PostgreSQL the gRPC service runs in a process of its own, with
    // GPUX_AGENT_DB_CONNECTIONS there; the few calls it hands to the market
    // take two more here.
    const inWorker = config.databaseUrl !== undefined && db.kind === 'postgres';
    const agentDb = openAgentDatabase(
      config.databaseUrl,
      inWorker ? 2 : config.agentDbConnections,
      db,
      logger,
    );
    if (agentDb !== db) stops.push(() => agentDb.close());
    const directory = new Directory(agentDb);
    // One registry for the process, whichever part of it owns the market now.
    const metrics = new ExchangeMetrics();
    const providers: ProviderContext = {
      observe: metrics.leaseObserver,
      db: agentDb,
      get market() {
        return owned().market;
      },
      directory,
      get publisher() {
        return owned().publisher;
      },
      secrets,
      logger,
      serving,
    };
    // The agents' gRPC service: on PostgreSQL in a process of its own, so
    // that agent traffic never holds up this process, which serves the
    // customers; on the embedded PGlite (one connection, in this process)
    // here. Either way its calls reach the market through the same backend.
    const backend = new MarketBackend(providers);
    const grpcOptions = {
      // GRPC_HOST, HOST unless set: REST may sit behind a local proxy while gRPC is public.
      host: config.grpcHost,
      port: config.grpcPort,
      tls: config.grpcTls,
      limits: config.agentShare,
    };
    let host: AgentHost | undefined;
    let grpc: {
      readonly port: number;
      close(): Promise<void>;
      /** The market changed these clusters' leases (agent-front.ts keeps its answers till then). */
      invalidate(clusters: readonly string[] | 'all'): void;
    };
    if (inWorker && config.databaseUrl !== undefined) {
      host = await startAgentHost(
        {
          databaseUrl: config.databaseUrl,
          connections: config.agentDbConnections,
          logLevel: config.logLevel,
          server: grpcOptions,
        },
        backend,
        logger,
        (err) => {
          logger.error({ err }, "the agents' gRPC service stopped; no agent can be heard");
          o.onFatal?.(err);
        },
        metrics.onGrpcCall,
      );
      grpc = host;
    } else {
      const server = await startAgentServer(
        {
          ...inThisThread(providers, {
            clock: () => Date.now(),
            generation: () => role.steward?.generation ?? 0,
          }),
          backend,
          onCall: metrics.onGrpcCall,
        },
        grpcOptions,
      );
      grpc = {
        port: server.port,
        close: () => server.close(),
        invalidate: (clusters) => server.front.invalidate(clusters),
      };
    }
    stops.push(() => grpc.close());

    // Woken by this process's numberer of account events (D35).
    const accountStreams = new AccountStreams(db);
    const app = buildApp(
      { ...config, logger, webhooksToLocalhost: config.databaseUrl === undefined },
      {
        db,
        accountStreams,
        adminToken,
        get market() {
          return owned().market;
        },
        secrets,
        serving,
        readiness: {
          // Its own connection on PostgreSQL: the probe waits behind no market traffic.
          database: ownershipDb,
          events: () => role.steward?.current()?.publisher.problem(),
        },
        consoleSessionHours: config.consoleSessionHours,
        provisioningTimeoutMs: config.provisioningTimeoutMs,
        metrics: {
          registry: metrics,
          token: config.metricsToken,
          provisioningTimeoutMs: config.provisioningTimeoutMs,
        },
      },
    );
    stops.push(async () => {
      await app.close();
    });
    await app.listen({ host: config.host, port: config.port });
    // PORT=0 picks a free port, so the URL says the one actually bound.
    const { port } = app.server.address() as AddressInfo;
    const url = urlOf(config.host, port);
    ownership.identity.url = url;

    const startOwned = (epochs: ReadonlyMap<string, number>): Promise<Owned> =>
      startOwnedPart(
        {
          db,
          config,
          logger,
          appliedAtStart,
          tokenFor: (books) => ownership.tokenFor(books),
          fenced: () => role.steward?.lose(),
          onLeases: (clusters) => grpc.invalidate(clusters),
          onNumbered: (heads) => accountStreams.numbered(heads),
          onCommit: metrics.onCommit,
          bus,
          secrets,
        },
        epochs,
      );

    const steward = new Steward<Owned>(
      ownership,
      { start: startOwned, stop: (part) => part.stop() },
      {
        logger,
        renewEveryMs: Math.max(100, Math.floor(config.ownerLeaseMs / 3)),
        pollEveryMs: STANDBY_POLL_MS,
        onStandby: (holder) => o.onStandby?.(holder, url, grpc.port),
        // The agents' service process is told, and counts it on its own clock.
        onChange: () => {
          const until = role.steward?.servingUntil ?? -Infinity;
          host?.setServing(
            until === -Infinity ? 0 : performance.timeOrigin + until,
            role.steward?.generation ?? 0,
          );
        },
      },
    );
    role.steward = steward;
    // Before the app and the gRPC service close: the steward stops the
    // owned part and releases the market last.
    stops.push(() => steward.close());
    steward.run();

    // The demo sells go through the API, which serves once the steward has
    // marked this process the owner.
    const first = steward.first.then(async (part) => {
      if (part.demo !== undefined && o.demoSells === true)
        await offerDemoNodes(app, part.demo, db, logger);
      return part;
    });
    first.catch(() => undefined);

    let drained: Promise<{ forced: boolean }> | undefined;
    return {
      url,
      grpcPort: grpc.port,
      adminToken,
      bus,
      app,
      db,
      owned: first,
      serving,
      closing: () => drained !== undefined,
      get market() {
        return owned().market;
      },
      drain(timeoutMs) {
        drained ??= (async () => {
          const { forced } = await app.drain(timeoutMs);
          // The agents' service next, while this process still owns the
          // market: its calls in flight finish and what heartbeats said is
          // written; then the market stops and is released (stopAll).
          await grpc.close().catch((err: unknown) => {
            logger.error({ err }, "closing the agents' gRPC service failed");
          });
          await stopAll();
          return { forced };
        })();
        return drained;
      },
    };
  } catch (err) {
    await stopAll().catch((stopErr: unknown) => {
      logger.error({ err: stopErr }, 'stopping after a failed start failed');
    });
    throw err;
  }
}
