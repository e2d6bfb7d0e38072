// Settings are read from the environment and the command line once, in
// main.ts, by the table of exchange/src/settings.ts, validated with every
// problem reported at once, then passed down as plain data (decision D34).

import { ConfigError, inTableOrder, readSettings, withDefaults } from '@gpux/shared';
import type { Env, LogLevel, SettingValues } from '@gpux/shared';

import type { RateLimits } from './auth/rate-limit.js';
import type { AgentShareLimits } from './providers/agent-share.js';
import type { GrpcTls } from './providers/grpc-server.js';
import { EXCHANGE_SETTINGS } from './settings.js';

// Shared with the agent (shared/src/settings.ts); exported here as before.
export { ConfigError };
export type { LogLevel };

export interface Config {
  /** HOST: the REST API listens here. */
  readonly host: string;
  readonly port: number;
  readonly logLevel: LogLevel;
  /** PostgreSQL to use; undefined: PGlite under dataDir (D34). */
  readonly databaseUrl: string | undefined;
  /** Where the embedded database keeps its files. */
  readonly dataDir: string;
  /** D31: guards the admin API; undefined: main.ts generates one and prints it. */
  readonly adminToken: string | undefined;
  /** GPUX_METRICS_TOKEN: may read /metrics only (metrics/metrics-route.ts); the operators' tokens may too. */
  readonly metricsToken: string | undefined;
  /** GPUX_DEMO=1: demo data on PostgreSQL too (always on the embedded database, D34). */
  readonly demo: boolean;
  /** D18: per account and minute. */
  readonly rateLimits: RateLimits;
  /** The public endpoints that count, per client address and minute (http/address-limit.ts). */
  readonly publicRatePerMinute: number;
  /** Live feed streams open at once per client address (feed/streams.ts). */
  readonly streamsPerAddress: number;
  /** A child process writes the live feed's streams (feed/writer.ts); false: this one does. */
  readonly feedWriter: boolean;
  /** D25: a lease still provisioning after this long fails with a full refund. */
  readonly provisioningTimeoutMs: number;
  /** A diagnostic: append every committed write batch to this file (market/capture.ts). */
  readonly captureWritesFile: string | undefined;
  /** D34: how long SIGTERM's drain waits for connections before it closes them. */
  readonly drainTimeoutMs: number;
  /** How long a console sign-in lasts (console/sessions.ts). */
  readonly consoleSessionHours: number;
  /** GRPC_HOST: the agents' gRPC service listens here; HOST unless set. */
  readonly grpcHost: string;
  /** D29: the agents' gRPC service listens here (GRPC_PORT; 0 picks a free port). */
  readonly grpcPort: number;
  /** TLS of the gRPC service (providers/grpc-server.ts); undefined: plain text. */
  readonly grpcTls: GrpcTls | undefined;
  /** NATS JetStream for the agents' events; undefined: the in-process bus (D34). */
  readonly natsUrl: string | undefined;
  /** The exchange's NATS credentials file (a .creds file or an nkey seed). */
  readonly natsCredsFile: string | undefined;
  /** The JetStream stream of the events (GPUX_EVENTS; tests use their own). */
  readonly natsStream: string;
  /** The first token of the event subjects (gpux; tests use their own, D29). */
  readonly natsSubjectRoot: string;
  /** D30: how long an agent's event stays unacked before JetStream delivers it again. */
  readonly natsAckWaitMs: number;
  /** D28: base64 of 32 bytes; undefined: made once and kept under dataDir. */
  readonly secretKey: readonly Buffer[] | undefined;
  /** D23: names this process's Idempotency-Key claims (several exchanges: one id each). */
  readonly instanceId: string;
  /** Each provider's share of the agents' gRPC service (issue 18; apart from D18). */
  readonly agentShare: AgentShareLimits;
  /** PostgreSQL connections of the agents' service, apart from the REST pool's (issue 18). */
  readonly agentDbConnections: number;
  /**
   * How long the market's owner keeps it without renewing (docs/ownership.md):
   * a standby takes over this long after the owner stops renewing.
   */
  readonly ownerLeaseMs: number;
  /** How long a published outbox row is kept (docs/operations.md, "What is kept"). */
  readonly outboxRetentionMs: number;
  /** How long an account's own event is kept (docs/api/account-events.md). */
  readonly accountEventRetentionMs: number;
}

type Values = SettingValues<typeof EXCHANGE_SETTINGS>;

/** The settings as read → the Config the exchange takes; cross-setting rules are problems. */
function configOf(v: Values, problems: string[], failed: ReadonlySet<string>): Config {
  // A setting refused on its own says so once: rules across settings wait till it is right.
  const check = (keys: readonly (keyof Values)[], broken: boolean, problem: string): void => {
    if (broken && !keys.some((k) => failed.has(k))) problems.push(problem);
  };
  const tlsKeys = ['grpcTlsCert', 'grpcTlsKey', 'grpcTlsClientCa'] as const;
  check(
    tlsKeys,
    (v.grpcTlsCert === undefined) !== (v.grpcTlsKey === undefined),
    'GRPC_TLS_CERT and GRPC_TLS_KEY go together: set both or neither',
  );
  check(
    tlsKeys,
    v.grpcTlsClientCa !== undefined && v.grpcTlsCert === undefined,
    'GRPC_TLS_CLIENT_CA needs GRPC_TLS_CERT and GRPC_TLS_KEY',
  );
  check(
    ['natsUrl', 'natsCreds'],
    v.natsCreds !== undefined && v.natsUrl === undefined,
    'NATS_CREDS needs NATS_URL',
  );
  // On PostgreSQL the agents run elsewhere and hear of fills through NATS
  // only: events on the in-process bus would reach no one, silently.
  check(
    ['databaseUrl', 'natsUrl'],
    v.databaseUrl !== undefined && v.natsUrl === undefined && !v.inProcessBus,
    'DATABASE_URL needs NATS_URL: agents hear of fills only through NATS; set GPUX_IN_PROCESS_BUS=1 to publish to this process alone on purpose',
  );
  return {
    host: v.host,
    port: v.port,
    logLevel: v.logLevel,
    databaseUrl: v.databaseUrl,
    dataDir: v.dataDir,
    adminToken: v.adminToken,
    metricsToken: v.metricsToken,
    demo: v.demo,
    rateLimits: {
      query: v.rateQueriesPerMinute,
      create: v.rateOrdersPerMinute,
      cancel: v.rateCancelsPerMinute,
    },
    publicRatePerMinute: v.ratePublicPerMinute,
    streamsPerAddress: v.streamsPerAddress,
    feedWriter: v.feedWriter,
    provisioningTimeoutMs: v.provisioningTimeoutSeconds * 1000,
    captureWritesFile: v.captureWrites,
    drainTimeoutMs: v.drainTimeoutSeconds * 1000,
    consoleSessionHours: v.consoleSessionHours,
    grpcHost: v.grpcHost ?? v.host,
    grpcPort: v.grpcPort,
    grpcTls:
      v.grpcTlsCert !== undefined && v.grpcTlsKey !== undefined
        ? { certFile: v.grpcTlsCert, keyFile: v.grpcTlsKey, clientCaFile: v.grpcTlsClientCa }
        : undefined,
    natsUrl: v.natsUrl,
    natsCredsFile: v.natsCreds,
    natsStream: v.natsStream,
    natsSubjectRoot: v.natsSubjectRoot,
    natsAckWaitMs: v.natsAckWaitSeconds * 1000,
    secretKey: v.secretKey,
    instanceId: v.instanceId,
    agentShare: {
      heartbeatsPerInterval: v.agentHeartbeatsPerInterval,
      readsPerMinute: v.agentReadsPerMinute,
      sellsPerMinute: v.agentSellsPerMinute,
      reportsPerMinute: v.agentReportsPerMinute,
      callsInFlight: v.agentCallsInFlight,
    },
    agentDbConnections: v.agentDbConnections,
    ownerLeaseMs: v.ownerLeaseSeconds * 1000,
    outboxRetentionMs: v.outboxRetentionHours * 3_600_000,
    accountEventRetentionMs: v.accountEventRetentionHours * 3_600_000,
  };
}

/** Every setting at its default (exchange/src/settings.ts). */
export const DEFAULT_CONFIG: Config = configOf(withDefaults(EXCHANGE_SETTINGS, {}), [], new Set());

/**
 * The environment and the command line (flags win), read once at start
 * (main.ts); throws ConfigError with every problem.
 */
export function loadConfig(env: Env = process.env, args: readonly string[] = []): Config {
  const problems: string[] = [];
  const failed = new Set<string>();
  const inputs = readSettings(EXCHANGE_SETTINGS, env, args, problems, failed);
  const config = configOf(withDefaults(EXCHANGE_SETTINGS, inputs), problems, failed);
  if (problems.length > 0) throw new ConfigError(inTableOrder(EXCHANGE_SETTINGS, problems));
  return config;
}
