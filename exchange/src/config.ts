// Settings are read from the environment once, in main.ts, validated with every
// problem reported at once, then passed down as plain data (decision D34).

import { existsSync } from 'node:fs';

import { DEFAULT_INSTANCE_ID } from './auth/idempotency.js';
import { DEFAULT_RATE_LIMITS } from './auth/rate-limit.js';
import type { RateLimits } from './auth/rate-limit.js';
import { parseSecretKey } from './leases/secret-box.js';
import { DEFAULT_AGENT_SHARE } from './providers/agent-share.js';
import type { AgentShareLimits } from './providers/agent-share.js';
import type { GrpcTls } from './providers/grpc-server.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  readonly host: string;
  readonly port: number;
  readonly logLevel: LogLevel;
  /** PostgreSQL to use; undefined: PGlite under dataDir (D34). */
  readonly databaseUrl: string | undefined;
  /** Where the embedded database keeps its files. */
  readonly dataDir: string;
  /** D31: guards the admin API; undefined: main.ts generates one and prints it. */
  readonly adminToken: string | undefined;
  /** GPUX_DEMO=1: demo data on PostgreSQL too (always on the embedded database, D34). */
  readonly demo: boolean;
  /** D18: per account and minute. */
  readonly rateLimits: RateLimits;
  /** D25: a lease still provisioning after this long fails with a full refund. */
  readonly provisioningTimeoutMs: number;
  /** A diagnostic: append every committed write batch to this file (market/capture.ts). */
  readonly captureWritesFile: string | undefined;
  /** D34: how long SIGTERM's drain waits for connections before it closes them. */
  readonly drainTimeoutMs: number;
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
  readonly secretKey: Buffer | undefined;
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
}

export const DEFAULT_CONFIG: Config = {
  host: '127.0.0.1',
  port: 8080,
  logLevel: 'info',
  databaseUrl: undefined,
  dataDir: '.gpux',
  adminToken: undefined,
  demo: false,
  rateLimits: DEFAULT_RATE_LIMITS,
  provisioningTimeoutMs: 5 * 60_000,
  captureWritesFile: undefined,
  drainTimeoutMs: 10_000,
  grpcPort: 50051,
  grpcTls: undefined,
  natsUrl: undefined,
  natsCredsFile: undefined,
  natsStream: 'GPUX_EVENTS',
  natsSubjectRoot: 'gpux',
  natsAckWaitMs: 30_000,
  secretKey: undefined,
  instanceId: DEFAULT_INSTANCE_ID,
  agentShare: DEFAULT_AGENT_SHARE,
  agentDbConnections: 4,
  ownerLeaseMs: 3_000,
};

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
  }
}

type Env = Readonly<Record<string, string | undefined>>;

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const value = (name: string): string | undefined => {
    const v = env[name]?.trim();
    return v === undefined || v === '' ? undefined : v;
  };

  const host = value('HOST') ?? DEFAULT_CONFIG.host;

  let port = DEFAULT_CONFIG.port;
  const rawPort = value('PORT');
  if (rawPort !== undefined) {
    // 0 asks the OS for a free port; main.ts prints the one it got.
    if (/^\d{1,5}$/.test(rawPort) && Number(rawPort) <= 65_535) port = Number(rawPort);
    else problems.push(`PORT must be an integer from 0 to 65535, got "${rawPort}"`);
  }

  let logLevel = DEFAULT_CONFIG.logLevel;
  const rawLevel = value('LOG_LEVEL');
  if (rawLevel !== undefined) {
    const found = LOG_LEVELS.find((l) => l === rawLevel);
    if (found !== undefined) logLevel = found;
    else problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${rawLevel}"`);
  }

  const databaseUrl = value('DATABASE_URL');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must be a postgres:// or postgresql:// URL');
  }
  const dataDir = value('GPUX_DATA_DIR') ?? DEFAULT_CONFIG.dataDir;
  const adminToken = value('GPUX_ADMIN_TOKEN');
  if (adminToken !== undefined && !/^[\x21-\x7e]{16,512}$/.test(adminToken)) {
    problems.push('GPUX_ADMIN_TOKEN must be 16 to 512 printable characters, no spaces');
  }

  let demo = DEFAULT_CONFIG.demo;
  const rawDemo = value('GPUX_DEMO');
  if (rawDemo !== undefined) {
    if (rawDemo === '1' || rawDemo === 'true') demo = true;
    else if (rawDemo === '0' || rawDemo === 'false') demo = false;
    else problems.push(`GPUX_DEMO must be 1, true, 0 or false, got "${rawDemo}"`);
  }

  const positiveInt = (name: string, fallback: number): number => {
    const raw = value(name);
    if (raw === undefined) return fallback;
    if (/^\d{1,9}$/.test(raw) && Number(raw) > 0) return Number(raw);
    problems.push(`${name} must be a positive integer, got "${raw}"`);
    return fallback;
  };
  const rateLimits: RateLimits = {
    query: positiveInt('GPUX_RATE_QUERIES_PER_MINUTE', DEFAULT_RATE_LIMITS.query),
    create: positiveInt('GPUX_RATE_ORDERS_PER_MINUTE', DEFAULT_RATE_LIMITS.create),
    cancel: positiveInt('GPUX_RATE_CANCELS_PER_MINUTE', DEFAULT_RATE_LIMITS.cancel),
  };

  const provisioningTimeoutMs =
    positiveInt('GPUX_PROVISIONING_TIMEOUT_SECONDS', DEFAULT_CONFIG.provisioningTimeoutMs / 1000) *
    1000;

  const captureWritesFile = value('GPUX_CAPTURE_WRITES');

  let drainTimeoutMs = DEFAULT_CONFIG.drainTimeoutMs;
  const rawDrain = value('GPUX_DRAIN_TIMEOUT_SECONDS');
  if (rawDrain !== undefined) {
    // 0: close every connection as soon as the drain starts.
    if (/^\d{1,5}$/.test(rawDrain) && Number(rawDrain) <= 3600)
      drainTimeoutMs = Number(rawDrain) * 1000;
    else
      problems.push(
        `GPUX_DRAIN_TIMEOUT_SECONDS must be an integer from 0 to 3600, got "${rawDrain}"`,
      );
  }

  let grpcPort = DEFAULT_CONFIG.grpcPort;
  const rawGrpcPort = value('GRPC_PORT');
  if (rawGrpcPort !== undefined) {
    if (/^\d{1,5}$/.test(rawGrpcPort) && Number(rawGrpcPort) <= 65_535)
      grpcPort = Number(rawGrpcPort);
    else problems.push(`GRPC_PORT must be an integer from 0 to 65535, got "${rawGrpcPort}"`);
  }
  const file = (name: string): string | undefined => {
    const f = value(name);
    if (f !== undefined && !existsSync(f)) problems.push(`${name}: no file ${f}`);
    return f;
  };
  const certFile = file('GRPC_TLS_CERT');
  const keyFile = file('GRPC_TLS_KEY');
  const clientCaFile = file('GRPC_TLS_CLIENT_CA');
  if ((certFile === undefined) !== (keyFile === undefined)) {
    problems.push('GRPC_TLS_CERT and GRPC_TLS_KEY go together');
  }
  if (clientCaFile !== undefined && certFile === undefined) {
    problems.push('GRPC_TLS_CLIENT_CA needs GRPC_TLS_CERT and GRPC_TLS_KEY');
  }
  const grpcTls: GrpcTls | undefined =
    certFile !== undefined && keyFile !== undefined
      ? { certFile, keyFile, clientCaFile }
      : undefined;

  const natsUrl = value('NATS_URL');
  if (natsUrl !== undefined && !/^(nats|tls):\/\/[^\s]+$/.test(natsUrl)) {
    problems.push('NATS_URL must be a nats:// or tls:// URL');
  }
  const natsCredsFile = file('NATS_CREDS');
  if (natsCredsFile !== undefined && natsUrl === undefined)
    problems.push('NATS_CREDS needs NATS_URL');

  const natsStream = value('GPUX_NATS_STREAM') ?? DEFAULT_CONFIG.natsStream;
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(natsStream)) {
    problems.push('GPUX_NATS_STREAM must be 1 to 64 letters, digits, dashes or underscores');
  }
  const natsSubjectRoot = value('GPUX_NATS_SUBJECT_ROOT') ?? DEFAULT_CONFIG.natsSubjectRoot;
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(natsSubjectRoot)) {
    problems.push(
      'GPUX_NATS_SUBJECT_ROOT must be one subject token: 1 to 32 letters, digits, dashes or underscores',
    );
  }

  const natsAckWaitMs =
    positiveInt('GPUX_NATS_ACK_WAIT_SECONDS', DEFAULT_CONFIG.natsAckWaitMs / 1000) * 1000;

  const rawKey = value('GPUX_SECRET_KEY');
  const secretKey = rawKey === undefined ? undefined : parseSecretKey(rawKey);
  if (rawKey !== undefined && secretKey === undefined) {
    problems.push('GPUX_SECRET_KEY must be base64 of 32 bytes (openssl rand -base64 32)');
  }

  const instanceId = value('GPUX_INSTANCE_ID') ?? DEFAULT_CONFIG.instanceId;
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(instanceId)) {
    problems.push('GPUX_INSTANCE_ID must be 1 to 64 letters, digits, dots, dashes or underscores');
  }

  let ownerLeaseMs = DEFAULT_CONFIG.ownerLeaseMs;
  const rawLease = value('GPUX_OWNER_LEASE_SECONDS');
  if (rawLease !== undefined) {
    if (/^\d{1,2}$/.test(rawLease) && Number(rawLease) >= 1 && Number(rawLease) <= 60)
      ownerLeaseMs = Number(rawLease) * 1000;
    else
      problems.push(`GPUX_OWNER_LEASE_SECONDS must be an integer from 1 to 60, got "${rawLease}"`);
  }

  const agentShare: AgentShareLimits = {
    heartbeatsPerInterval: positiveInt(
      'GPUX_AGENT_HEARTBEATS_PER_INTERVAL',
      DEFAULT_AGENT_SHARE.heartbeatsPerInterval,
    ),
    readsPerMinute: positiveInt('GPUX_AGENT_READS_PER_MINUTE', DEFAULT_AGENT_SHARE.readsPerMinute),
    sellsPerMinute: positiveInt('GPUX_AGENT_SELLS_PER_MINUTE', DEFAULT_AGENT_SHARE.sellsPerMinute),
    reportsPerMinute: positiveInt(
      'GPUX_AGENT_REPORTS_PER_MINUTE',
      DEFAULT_AGENT_SHARE.reportsPerMinute,
    ),
    callsInFlight: positiveInt('GPUX_AGENT_CALLS_IN_FLIGHT', DEFAULT_AGENT_SHARE.callsInFlight),
  };
  const agentDbConnections = positiveInt(
    'GPUX_AGENT_DB_CONNECTIONS',
    DEFAULT_CONFIG.agentDbConnections,
  );
  if (agentDbConnections > 100) problems.push('GPUX_AGENT_DB_CONNECTIONS is at most 100');

  if (problems.length > 0) throw new ConfigError(problems);
  return {
    host,
    port,
    logLevel,
    databaseUrl,
    dataDir,
    adminToken,
    demo,
    rateLimits,
    provisioningTimeoutMs,
    captureWritesFile,
    drainTimeoutMs,
    grpcPort,
    grpcTls,
    natsUrl,
    natsCredsFile,
    natsStream,
    natsSubjectRoot,
    natsAckWaitMs,
    secretKey,
    instanceId,
    agentShare,
    agentDbConnections,
    ownerLeaseMs,
  };
}
