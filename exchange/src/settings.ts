// The exchange's settings (issue 20): the one table config.ts reads the
// environment and the command line by, `gpux exchange --help` prints and
// the README's "Settings of the exchange" is generated from (npm run
// gen:readme; cli/src/readme-settings.test.ts fails when they differ).
// Values are the settings as people write them (seconds, not ms); config.ts
// puts them together into the Config the rest of the exchange takes.

import { readFileSync } from 'node:fs';

import {
  SettingProblem,
  integer,
  logLevel,
  matching,
  natsUrl,
  onOff,
  parseNatsCredentials,
  positive,
  setting,
  settingsHelp,
  text,
} from '@gpux/shared';
import type { Parser } from '@gpux/shared';

import { DEFAULT_INSTANCE_ID } from './auth/idempotency.js';
import { DEFAULT_SESSION_HOURS } from './console/sessions.js';
import { DEFAULT_PUBLIC_RATE_PER_MINUTE } from './http/address-limit.js';
import { DEFAULT_RATE_LIMITS } from './auth/rate-limit.js';
import { DEFAULT_STREAMS_PER_ADDRESS } from './feed/streams.js';
import { parseSecretKeys } from './leases/secret-box.js';
import { DEFAULT_AGENT_SHARE } from './providers/agent-share.js';

const port = integer(0, 65_535);

/** A file that can be read (it is read again when used). */
const readableFile: Parser<string> = (path) => {
  try {
    readFileSync(path);
    return path;
  } catch (err) {
    throw new SettingProblem(
      `must name a readable file (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`,
    );
  }
};

const natsCreds: Parser<string> = (path) => {
  const file = readableFile(path);
  try {
    parseNatsCredentials(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new SettingProblem(
      `must name ${(err as Error).message.replace(/^NATS credentials must be /, '')}`,
    );
  }
  return file;
};

const secretKey: Parser<readonly Buffer[]> = (t) => {
  const keys = parseSecretKeys(t);
  if (keys === undefined)
    throw new SettingProblem(
      'must be base64 of 32 bytes (openssl rand -base64 32), or several such keys newest first, comma-separated',
    );
  return keys;
};

export const EXCHANGE_SETTINGS = [
  setting('host', {
    name: 'HOST',
    parse: text,
    default: '127.0.0.1',
    description: 'address the REST API listens on (and the gRPC service, unless `GRPC_HOST`)',
  }),
  setting('port', {
    name: 'PORT',
    parse: port,
    default: 8080,
    description: 'HTTP port; `0` picks a free one (the printed URL says which)',
  }),
  setting('logLevel', {
    name: 'LOG_LEVEL',
    parse: logLevel,
    default: 'info',
    description: '`fatal` … `trace`, or `silent`',
  }),
  setting('databaseUrl', {
    name: 'DATABASE_URL',
    parse: matching(/^postgres(ql)?:\/\/\S+$/, 'a postgres:// or postgresql:// URL'),
    secret: true,
    description:
      'PostgreSQL (`postgres://…`); unset: the embedded PGlite under `GPUX_DATA_DIR/pgdata`',
  }),
  setting('dataDir', {
    name: 'GPUX_DATA_DIR',
    parse: text,
    default: '.gpux',
    description: 'where the embedded database keeps its files',
  }),
  setting('adminToken', {
    name: 'GPUX_ADMIN_TOKEN',
    parse: matching(/^[\x21-\x7e]{16,512}$/, '16 to 512 printable characters, no spaces'),
    secret: true,
    shownDefault: 'generated',
    description: "the operators' token for `/v1/admin/*`; unset: a new one is printed at start",
  }),
  setting('metricsToken', {
    name: 'GPUX_METRICS_TOKEN',
    parse: matching(/^[\x21-\x7e]{16,512}$/, '16 to 512 printable characters, no spaces'),
    secret: true,
    description:
      'a token that may read `/metrics` and nothing else (Prometheus); unset: only the operators\u2019 tokens may',
  }),
  setting('demo', {
    name: 'GPUX_DEMO',
    parse: onOff,
    default: false,
    description:
      '`1`: create demo accounts and a demo cluster on PostgreSQL too (always on the embedded database)',
  }),
  setting('inProcessBus', {
    name: 'GPUX_IN_PROCESS_BUS',
    parse: onOff,
    default: false,
    description:
      '`1`: with `DATABASE_URL` and no `NATS_URL`, publish events to the in-process bus on purpose: only an agent inside this process hears them (`gpux start`); without it that pair is refused',
  }),
  // D18: the REST rate limits.
  setting('rateQueriesPerMinute', {
    name: 'GPUX_RATE_QUERIES_PER_MINUTE',
    parse: positive,
    default: DEFAULT_RATE_LIMITS.query,
    description: 'queries per account per sliding minute',
  }),
  setting('rateOrdersPerMinute', {
    name: 'GPUX_RATE_ORDERS_PER_MINUTE',
    parse: positive,
    default: DEFAULT_RATE_LIMITS.create,
    description: 'order creations (and resells) per account per minute',
  }),
  setting('rateCancelsPerMinute', {
    name: 'GPUX_RATE_CANCELS_PER_MINUTE',
    parse: positive,
    default: DEFAULT_RATE_LIMITS.cancel,
    description: 'order cancellations per account per minute',
  }),
  // Issue 22: the public endpoints, per client address (docs/api/market-data.md).
  setting('ratePublicPerMinute', {
    name: 'GPUX_RATE_PUBLIC_PER_MINUTE',
    parse: positive,
    default: DEFAULT_PUBLIC_RATE_PER_MINUTE,
    description:
      'requests per client address and minute to the public endpoints that count (`GET /v1/stream`, the OpenAPI document; not the health probes), as a bucket of that many that refills over the minute',
  }),
  setting('streamsPerAddress', {
    name: 'GPUX_STREAMS_PER_ADDRESS',
    parse: positive,
    default: DEFAULT_STREAMS_PER_ADDRESS,
    description: 'live feed streams (`GET /v1/stream`) open at once per client address',
  }),
  setting('feedWriter', {
    name: 'GPUX_FEED_WRITER',
    parse: onOff,
    default: true,
    description:
      '`0`: the exchange process writes the live feed streams itself instead of handing them to its feed writer process (docs/architecture.md)',
  }),
  // D25
  setting('provisioningTimeoutSeconds', {
    name: 'GPUX_PROVISIONING_TIMEOUT_SECONDS',
    parse: positive,
    default: 300,
    description: 'a lease still provisioning after this long fails, with a full refund',
  }),
  setting('consoleSessionHours', {
    name: 'GPUX_CONSOLE_SESSION_HOURS',
    parse: integer(1, 720),
    default: DEFAULT_SESSION_HOURS,
    description:
      'how long a sign-in to the operators’ web console (`/console`) lasts, in hours (1 to 720)',
  }),
  // D34
  setting('drainTimeoutSeconds', {
    name: 'GPUX_DRAIN_TIMEOUT_SECONDS',
    parse: integer(0, 3600),
    default: 10,
    description:
      'on SIGTERM, how long requests in flight may finish (0 to 3600); connections still open then are closed',
  }),
  setting('captureWrites', {
    name: 'GPUX_CAPTURE_WRITES',
    parse: text,
    description:
      'a diagnostic: append every committed write batch to this file, for `npm run bench -- pg-replay`',
  }),
  // D29: the agents' gRPC service.
  setting('grpcHost', {
    name: 'GRPC_HOST',
    parse: text,
    shownDefault: '`HOST`',
    description:
      "address the agents' gRPC service listens on, apart from the REST API's (REST behind a local proxy, gRPC public)",
  }),
  setting('grpcPort', {
    name: 'GRPC_PORT',
    parse: port,
    default: 50051,
    description: "the agents' gRPC service; `0` picks a free one (the banner says which)",
  }),
  setting('grpcTlsCert', {
    name: 'GRPC_TLS_CERT',
    parse: readableFile,
    description:
      'PEM server certificate of the gRPC service, with `GRPC_TLS_KEY`; unset: plain text (loopback, tests)',
  }),
  setting('grpcTlsKey', {
    name: 'GRPC_TLS_KEY',
    parse: readableFile,
    description: 'PEM private key of `GRPC_TLS_CERT`',
  }),
  setting('grpcTlsClientCa', {
    name: 'GRPC_TLS_CLIENT_CA',
    parse: readableFile,
    description: 'PEM CA: agents must then present a client certificate it signed (mutual TLS)',
  }),
  // Each provider's share of the gRPC service (agent-share.ts; apart from D18).
  setting('agentHeartbeatsPerInterval', {
    name: 'GPUX_AGENT_HEARTBEATS_PER_INTERVAL',
    parse: positive,
    default: DEFAULT_AGENT_SHARE.heartbeatsPerInterval,
    description:
      "each provider's share of the gRPC service ([docs/providers.md](docs/providers.md)): heartbeats per cluster within any 90 % of its agent's declared interval",
  }),
  setting('agentReadsPerMinute', {
    name: 'GPUX_AGENT_READS_PER_MINUTE',
    parse: positive,
    default: DEFAULT_AGENT_SHARE.readsPerMinute,
    description: '… `Attach`, `ListSells`, `ListLeases` per cluster and minute',
  }),
  setting('agentSellsPerMinute', {
    name: 'GPUX_AGENT_SELLS_PER_MINUTE',
    parse: positive,
    default: DEFAULT_AGENT_SHARE.sellsPerMinute,
    description:
      '… `PublishSell`, `WithdrawSell` per cluster and minute, for every 10 of its nodes begun',
  }),
  setting('agentReportsPerMinute', {
    name: 'GPUX_AGENT_REPORTS_PER_MINUTE',
    parse: positive,
    default: DEFAULT_AGENT_SHARE.reportsPerMinute,
    description: '… `Report*` per cluster and minute, for every 10 of its nodes begun',
  }),
  setting('agentCallsInFlight', {
    name: 'GPUX_AGENT_CALLS_IN_FLIGHT',
    parse: positive,
    default: DEFAULT_AGENT_SHARE.callsInFlight,
    description:
      '… calls of one provider being answered at once, per cluster it has; past any of these: `RESOURCE_EXHAUSTED` with `retry-after-ms`',
  }),
  setting('agentDbConnections', {
    name: 'GPUX_AGENT_DB_CONNECTIONS',
    parse: integer(1, 100),
    default: 4,
    description:
      "PostgreSQL connections of the agents' gRPC service (1 to 100; its own process on PostgreSQL, 2 more for the calls it hands the market), apart from the 10 serving REST; PGlite has one, shared",
  }),
  setting('natsUrl', {
    name: 'NATS_URL',
    parse: natsUrl,
    secret: true,
    description:
      "NATS JetStream for the agents' events (`nats://[user:pass@]host:port`, or `tls://…`: TLS required); unset: the in-process bus",
  }),
  setting('natsCreds', {
    name: 'NATS_CREDS',
    parse: natsCreds,
    description:
      "the exchange's NATS credentials: an nkey seed file or a `.creds` file (`deploy/nats/`)",
  }),
  setting('natsStream', {
    name: 'GPUX_NATS_STREAM',
    parse: matching(/^[A-Za-z0-9_-]{1,64}$/, '1 to 64 letters, digits, dashes or underscores'),
    default: 'GPUX_EVENTS',
    description: 'the JetStream stream of the events (test runs on one server use their own)',
  }),
  setting('natsSubjectRoot', {
    name: 'GPUX_NATS_SUBJECT_ROOT',
    parse: matching(
      /^[A-Za-z0-9_-]{1,32}$/,
      'one subject token: 1 to 32 letters, digits, dashes or underscores',
    ),
    default: 'gpux',
    description: 'the first token of the event subjects (likewise)',
  }),
  // D30
  setting('natsAckWaitSeconds', {
    name: 'GPUX_NATS_ACK_WAIT_SECONDS',
    parse: positive,
    default: 30,
    description:
      'an event an agent has not acked within this is delivered to it again (set on its consumer, also on one made earlier)',
  }),
  // D28
  setting('secretKey', {
    name: 'GPUX_SECRET_KEY',
    parse: secretKey,
    secret: true,
    shownDefault: 'generated',
    description:
      'base64 of 32 bytes sealing reported kubeconfigs (AES-256-GCM); several keys newest first, comma-separated, while rotating: the newest seals, all open ([docs/operations.md](docs/operations.md)); unset: made once and kept in `GPUX_DATA_DIR/secret.key` (a warning on PostgreSQL: every exchange process needs the same key)',
  }),
  // D23
  setting('instanceId', {
    name: 'GPUX_INSTANCE_ID',
    parse: matching(
      /^[A-Za-z0-9._-]{1,64}$/,
      '1 to 64 letters, digits, dots, dashes or underscores',
    ),
    default: DEFAULT_INSTANCE_ID,
    description:
      "names this process's Idempotency-Key claims, for people (a takeover releases every claim in progress); with several exchange processes, one id each",
  }),
  setting('outboxRetentionHours', {
    name: 'GPUX_OUTBOX_RETENTION_HOURS',
    parse: integer(1, 8760),
    default: 168,
    description:
      'published events are kept this long in the outbox, then deleted (1 to 8760); unpublished ones are never deleted ([docs/operations.md](docs/operations.md))',
  }),
  setting('accountEventRetentionHours', {
    name: 'GPUX_ACCOUNT_EVENT_RETENTION_HOURS',
    parse: integer(24, 8760),
    default: 720,
    description:
      "an account's own events are kept this long for GET /v1/account/stream's Last-Event-ID, then deleted (24 to 8760; [docs/api/account-events.md](docs/api/account-events.md))",
  }),
  setting('ownerLeaseSeconds', {
    name: 'GPUX_OWNER_LEASE_SECONDS',
    parse: integer(1, 60),
    default: 3,
    description:
      "one process writes a database's market ([docs/ownership.md](docs/ownership.md)): a standby takes over this long after the owner stops renewing (1 to 60)",
  }),
] as const;

/** `gpux exchange --help`. */
export function exchangeHelp(): string {
  return [
    'gpux exchange: the exchange alone (REST API, matching engine, the',
    "agents' gRPC service); the database and the event bus are embedded",
    'unless DATABASE_URL and NATS_URL name them.',
    '',
    'Usage: gpux exchange [--help] [--<flag> <value> | --<flag>=<value> …]',
    '',
    'Settings: environment variables, or their flags (a flag wins over its',
    'variable). Prefer the environment for tokens and keys: flags show in `ps`.',
    '',
    ...settingsHelp(EXCHANGE_SETTINGS),
    '',
    'SIGTERM drains: requests in flight finish within GPUX_DRAIN_TIMEOUT_SECONDS, exit 0.',
    '',
  ].join('\n');
}
