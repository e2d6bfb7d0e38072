// The running exchange: what `gpux exchange` (main.ts) and `gpux start`
// (cli/, with a simulated agent in the same process) both start. Opening
// order: database and migrations, the books (flow 5), the outbox relay to
// NATS JetStream or the in-process bus, the agents' gRPC service and the
// sweep of silent nodes (D29), then the HTTP API. Closing is the reverse,
// after the HTTP drain (D34).

import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import { InProcessBus } from '@gpux/shared';
import type { FastifyInstance } from 'fastify';
import type { Logger as PinoLogger } from 'pino';

import { Directory } from './accounts/directory.js';
import { seedDemo } from './accounts/demo.js';
import type { DemoTokens } from './accounts/demo.js';
import { buildApp } from './app.js';
import { purgeIdempotencyKeys, releaseAbandonedClaims } from './auth/idempotency.js';
import { newApiToken } from './auth/tokens.js';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { migrate } from './db/migrate.js';
import { openPglite } from './db/pglite.js';
import { openPostgres } from './db/postgres.js';
import { BusPublisher } from './events/bus-publisher.js';
import { JetStreamPublisher } from './events/jetstream-publisher.js';
import { OutboxRelay } from './events/outbox-relay.js';
import type { EventPublisher } from './events/publisher.js';
import { SecretBox, loadOrCreateSecretKey } from './leases/secret-box.js';
import type { Logger } from './logger.js';
import { captureWrites } from './market/capture.js';
import { Market } from './market/market.js';
import { startAgentServer } from './providers/grpc-server.js';
import type { AgentServer } from './providers/grpc-server.js';
import { sweepSilentNodes } from './providers/node-health.js';
import type { ProviderContext } from './providers/provider-context.js';

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
}

export interface Exchange {
  readonly url: string;
  readonly grpcPort: number;
  readonly adminToken: string;
  /** Migrations applied by this start (empty: the schema was up to date). */
  readonly applied: readonly number[];
  /** The demo accounts and cluster, when the demo data is on (D34). */
  readonly demo: DemoTokens | undefined;
  /** The bus events go to when NATS_URL is unset. */
  readonly bus: InProcessBus | undefined;
  readonly app: FastifyInstance;
  readonly market: Market;
  readonly db: Database;
  /**
   * D34: no new requests, running ones finish (their answers carry
   * `Connection: close`, new ones get 503), what is still open after
   * `timeoutMs` is closed; then everything else stops.
   */
  drain(timeoutMs: number): Promise<{ forced: boolean }>;
}

/** How often silent agents are looked for (D29: offline after 3 of their intervals). */
const SWEEP_INTERVAL_MS = 1_000;

function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** D34: PostgreSQL when DATABASE_URL is set, else PGlite on disk under GPUX_DATA_DIR. */
async function openDatabase(config: Config, logger: Logger): Promise<Database> {
  const opened =
    config.databaseUrl !== undefined
      ? openPostgres(config.databaseUrl, 10, logger)
      : await (async () => {
          const dir = join(config.dataDir, 'pgdata');
          mkdirSync(dir, { recursive: true });
          return openPglite(dir);
        })();
  if (config.captureWritesFile === undefined) return opened;
  logger.warn(
    { file: config.captureWritesFile },
    'every write batch is also appended to GPUX_CAPTURE_WRITES',
  );
  return captureWrites(opened, config.captureWritesFile);
}

/** D28: GPUX_SECRET_KEY, else a key made once and kept under GPUX_DATA_DIR. */
function secretsOf(config: Config, logger: Logger): SecretBox {
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

export async function startExchange(config: Config, o: ExchangeOptions): Promise<Exchange> {
  const { logger } = o;
  const db = await openDatabase(config, logger);
  const stops: (() => Promise<void>)[] = [() => db.close()];
  const stopAll = async (): Promise<void> => {
    for (const stop of stops.reverse()) await stop();
  };
  try {
    const applied = await migrate(db);
    const secrets = secretsOf(config, logger);
    // D23: claims this process left in progress when it stopped committed nothing.
    const released = await releaseAbandonedClaims(db, config.instanceId);
    if (released > 0)
      logger.warn({ released }, 'released Idempotency-Keys left in progress by the last run');
    const adminToken = config.adminToken ?? newApiToken();

    // Every book is rebuilt from the database before the first request (flow 5).
    const market = await Market.open(db, {
      provisioningTimeoutMs: config.provisioningTimeoutMs,
      logger,
    });
    stops.push(() => market.close());

    const bus = config.natsUrl === undefined ? (o.bus ?? new InProcessBus()) : undefined;
    const publisher: EventPublisher =
      config.natsUrl === undefined
        ? new BusPublisher(bus ?? new InProcessBus())
        : await JetStreamPublisher.connect({
            url: config.natsUrl,
            credsFile: config.natsCredsFile,
            stream: config.natsStream,
            subjectRoot: config.natsSubjectRoot,
            agentAckWaitMs: config.natsAckWaitMs,
            logger,
          });
    stops.push(() => publisher.close());
    const relay = new OutboxRelay(db, publisher, { logger });
    market.onEvents(() => relay.wake());
    relay.start();
    stops.push(() => relay.close());

    const directory = new Directory(db);
    const providers: ProviderContext = { db, market, directory, publisher, secrets, logger };
    const grpc: AgentServer = await startAgentServer(providers, {
      host: config.host,
      port: config.grpcPort,
      tls: config.grpcTls,
    });
    stops.push(() => grpc.close());
    const sweep = setInterval(() => {
      sweepSilentNodes(providers).catch((err: unknown) => {
        logger.error({ err }, 'looking for silent agents failed; trying again');
      });
    }, SWEEP_INTERVAL_MS);
    sweep.unref();
    stops.push(() => Promise.resolve(clearInterval(sweep)));

    const app = buildApp({ ...config, logger }, { db, adminToken, market, secrets });
    // D34: demo data on the embedded database, or on PostgreSQL when asked for.
    const demo = config.databaseUrl === undefined || config.demo ? await seedDemo(db) : undefined;

    // D23: keys are kept 24 h; forget older ones once an hour.
    const purge = setInterval(() => {
      purgeIdempotencyKeys(db, Date.now()).catch((err: unknown) => {
        logger.warn({ err }, 'forgetting expired Idempotency-Keys failed; next try in an hour');
      });
    }, 3_600_000);
    purge.unref();
    stops.push(() => Promise.resolve(clearInterval(purge)));

    await app.listen({ host: config.host, port: config.port });
    // PORT=0 picks a free port, so the URL says the one actually bound.
    const { port } = app.server.address() as AddressInfo;
    const url = urlOf(config.host, port);
    if (demo !== undefined && o.demoSells === true) await offerDemoNodes(app, demo, db, logger);

    let drained: Promise<{ forced: boolean }> | undefined;
    return {
      url,
      grpcPort: grpc.port,
      adminToken,
      applied,
      demo,
      bus,
      app,
      market,
      db,
      drain(timeoutMs) {
        drained ??= (async () => {
          const { forced } = await app.drain(timeoutMs);
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

/** Something to buy when no agent lists the demo cluster: two of its nodes. */
async function offerDemoNodes(
  app: FastifyInstance,
  demo: DemoTokens,
  db: Database,
  logger: Logger,
): Promise<void> {
  const offered = await db.query(
    'SELECT 1 FROM orders WHERE cluster_id = $1 AND book_state IS NOT NULL LIMIT 1',
    [demo.clusterId],
  );
  if (offered.length > 0) return;
  const sell = await app.inject({
    method: 'POST',
    url: '/v1/orders',
    headers: { authorization: `Bearer ${demo.providerToken}` },
    payload: {
      side: 'sell',
      gpu_type: 'h100',
      zone: 'us-west-1',
      gpu_count: 16,
      duration_hours: 720,
      limit_price: 2.5,
      cluster_id: demo.clusterId,
    },
  });
  if (sell.statusCode !== 200) {
    logger.warn({ status: sell.statusCode, body: sell.body }, 'the demo sell order was refused');
  }
}
