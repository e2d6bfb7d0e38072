// Entry point of `gpux exchange`: configure, start (server.ts), print the
// start banner, drain on signals (D34).
//
// Everything is logged through one pino logger, the one Fastify logs requests
// with, as JSON lines on stdout. The start banner is the exception: the lines
// a person reads to begin (the database, the URL, the tokens, curl examples)
// are printed plainly.

import { realpathSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { pino } from 'pino';
import type { Logger } from 'pino';

import { describeNats } from '@gpux/shared';

import { ConfigError, loadConfig } from './config.js';
import type { Config } from './config.js';
import { MigrationError } from './db/migrate.js';
import { SecretKeyError } from './leases/secret-check.js';
import { JetStreamPublisher } from './events/jetstream-publisher.js';
import { EXCHANGE_NODE_FLAGS } from './node-flags.js';
import type { Holder } from './market/ownership.js';
import { startExchange } from './server.js';
import { exchangeHelp } from './settings.js';
import type { Exchange, Owned } from './server.js';

/**
 * The start banner: plain lines for a person, on stderr, so that stdout
 * holds nothing but the JSON log records (a log shipper reads it as is).
 */
export function banner(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** `--help` or `-h` among the arguments: the help is printed, and nothing starts. */
export function wantsHelp(args: readonly string[]): boolean {
  return args.includes('--help') || args.includes('-h');
}

/** The settings from the environment and the flags; every problem logged at once, exit 2. */
export function readConfig(
  env: NodeJS.ProcessEnv = process.env,
  args: readonly string[] = [],
): Config {
  try {
    return loadConfig(env, args);
  } catch (err) {
    if (err instanceof ConfigError) {
      // No configuration means no configured level: the default logger says why.
      pino().fatal({ problems: err.problems }, err.message);
      process.exit(2);
    }
    throw err;
  }
}

/** DATABASE_URL without its password: `gpux@db.example:5432/gpux`. */
function postgresOf(databaseUrl: string): string {
  try {
    const u = new URL(databaseUrl);
    const user = u.username === '' ? '' : `${decodeURIComponent(u.username)}@`;
    return `${user}${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return '(DATABASE_URL)';
  }
}

/** What the process is connected to, one line each: the database, the event bus, the agents' service. */
export function connectionLines(
  config: Config,
  ex: Pick<Exchange, 'grpcPort'>,
  owned: Pick<Owned, 'applied' | 'schemaVersion' | 'publisher'>,
): string[] {
  const database =
    config.databaseUrl === undefined
      ? `database: embedded PGlite in ${join(config.dataDir, 'pgdata')}`
      : `database: PostgreSQL ${postgresOf(config.databaseUrl)}`;
  const migrations =
    owned.applied.length > 0
      ? `, migrations applied: ${owned.applied.join(', ')}, schema version ${owned.schemaVersion}`
      : `, schema up to date (version ${owned.schemaVersion})`;
  let events: string;
  if (config.natsUrl === undefined) {
    events = 'events: the in-process bus (only an agent inside this process hears them)';
  } else {
    const server =
      owned.publisher instanceof JetStreamPublisher
        ? owned.publisher.describe()
        : describeNats(config.natsUrl);
    events =
      `events: NATS JetStream ${server}, stream ${config.natsStream}` +
      (config.natsCredsFile === undefined ? '' : `, credentials ${config.natsCredsFile}`);
  }
  const tls = config.grpcTls;
  const grpc =
    `agents' gRPC service on port ${ex.grpcPort} of ${config.grpcHost}, ` +
    (tls === undefined
      ? 'plain text (no TLS)'
      : tls.clientCaFile === undefined
        ? 'TLS'
        : 'mutual TLS (agents present a client certificate)');
  return [`${database}${migrations}`, events, grpc];
}

/** What a person needs to begin: what it is connected to, the URL, the tokens. */
export function exchangeBanner(config: Config, ex: Exchange, owned: Owned): void {
  const [database, events, grpc] = connectionLines(config, ex, owned);
  banner(database ?? '');
  banner(events ?? '');
  if (config.adminToken === undefined) {
    banner(`admin token (GPUX_ADMIN_TOKEN unset, generated for this run): ${ex.adminToken}`);
  }
  banner(`listening on ${ex.url}`);
  banner(grpc ?? '');
  if (owned.demo === undefined) return;
  banner(`demo buyer token (${owned.demo.buyerAccountId}): ${owned.demo.buyerToken}`);
  banner(
    `demo provider token (${owned.demo.providerAccountId}, cluster ${owned.demo.clusterId}): ${owned.demo.providerToken}`,
  );
}

/**
 * The one line a standby prints (docs/ownership.md): it serves 503 on its
 * URL until it takes the market over.
 */
export function standbyBanner(holder: Holder, url: string, grpcPort: number): void {
  const who =
    `${holder.instanceId ?? '?'} (pid ${holder.pid ?? '?'} on ${holder.host ?? '?'}` +
    `${holder.url === null ? '' : `, ${holder.url}`})`;
  banner(
    `standby on ${url} (agents' gRPC service on port ${grpcPort}): ` +
      `the market of this database is owned by ${who}, epoch ${holder.epoch}; ` +
      'taking over when its lease lapses or it hands over',
  );
}

/** Why a start failed, said once: an edited migration plainly, anything else as a log record. */
function reportStartFailure(logger: Logger, err: unknown): void {
  if (err instanceof MigrationError || err instanceof SecretKeyError)
    process.stderr.write(`${err.message}\n`);
  else logger.fatal({ err }, 'the exchange could not start');
}

/**
 * Start, or say why not: an edited migration (D34's refusal) is a message
 * for the operator on stderr without a stack trace; anything else is logged
 * with its cause. Exits 1 either way.
 */
export async function startOrExit(
  config: Config,
  logger: Logger,
  start: () => Promise<Exchange>,
): Promise<Exchange> {
  const missingFlags = EXCHANGE_NODE_FLAGS.filter((f) => !process.execArgv.includes(f));
  if (missingFlags.length > 0) {
    logger.warn(
      { missing: missingFlags },
      'node runs without flags that npm start uses (exchange/src/node-flags.ts says why)',
    );
  }
  try {
    return await start();
  } catch (err) {
    reportStartFailure(logger, err);
    process.exit(1);
  }
}

/**
 * Wait until this process owns the market (at once, or after standing by).
 * A failed start of the owned part exits 1 as startOrExit does; undefined
 * when the process drained first (its signal handler exits).
 */
export async function ownedOrExit(ex: Exchange, logger: Logger): Promise<Owned | undefined> {
  try {
    return await ex.owned;
  } catch (err) {
    if (ex.closing()) return undefined;
    reportStartFailure(logger, err);
    await ex.drain(0).catch(() => undefined);
    process.exit(1);
  }
}

/**
 * A part the exchange cannot work without stopped (the agents' gRPC
 * thread): drain what can be drained, release the market for a standby,
 * exit 1 so a supervisor starts the process again.
 */
export function exitOnFatal(logger: Logger, ex: Exchange | undefined): void {
  logger.fatal('a part of the exchange stopped; draining and exiting');
  void (ex?.drain(0) ?? Promise.resolve()).finally(() => process.exit(1));
}

/** SIGTERM / SIGINT drain (D34); a second signal exits at once. */
export function drainOnSignals(
  logger: Logger,
  drainTimeoutMs: number,
  stop: (timeoutMs: number) => Promise<{ forced: boolean }>,
): void {
  let draining = false;
  const drain = async (signal: NodeJS.Signals): Promise<void> => {
    if (draining) {
      // A second signal means the operator will not wait for in-flight requests.
      logger.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    draining = true;
    logger.info({ signal, timeoutMs: drainTimeoutMs }, `${signal} received, draining`);
    try {
      const { forced } = await stop(drainTimeoutMs);
      if (forced) logger.warn('drain deadline passed: the remaining connections were closed');
      logger.info('drained; exiting');
      process.exit(0);
    } catch (err) {
      logger.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', (signal) => void drain(signal));
  process.on('SIGINT', (signal) => void drain(signal));
}

/**
 * `gpux exchange [flags]`: the exchange alone (the demo nodes offered when
 * the demo data is on); `--help` prints its settings and starts nothing.
 */
export async function runExchange(
  args: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  if (wantsHelp(args)) {
    process.stdout.write(exchangeHelp());
    return;
  }
  const config = readConfig(env, args);
  const logger = pino({ level: config.logLevel });
  const started: { ex?: Exchange } = {};
  const ex = await startOrExit(config, logger, () =>
    startExchange(config, {
      logger,
      demoSells: true,
      onStandby: standbyBanner,
      onFatal: () => exitOnFatal(logger, started.ex),
    }),
  );
  started.ex = ex;
  drainOnSignals(logger, config.drainTimeoutMs, (ms) => ex.drain(ms));
  const owned = await ownedOrExit(ex, logger);
  if (owned === undefined) return;
  exchangeBanner(config, ex, owned);
  if (owned.demo === undefined) return;
  const { buyerToken } = owned.demo;
  banner(`try: curl -H 'Authorization: Bearer ${buyerToken}' ${ex.url}/v1/account`);
  banner(
    `     curl -H 'Authorization: Bearer ${buyerToken}' -H 'Content-Type: application/json' ` +
      `-d '{"side":"buy","gpu_type":"h100","zone":"us-west-1","gpu_count":8,"duration_hours":2}' ${ex.url}/v1/orders`,
  );
}

// Run when started as a program (node exchange/dist/main.js), not when imported (cli/).
if (
  process.argv[1] !== undefined &&
  realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)
) {
  await runExchange();
}
