// Settings are read from the environment once, in main.ts, validated with every
// problem reported at once, then passed down as plain data (decision D34).

import { DEFAULT_RATE_LIMITS } from './auth/rate-limit.js';
import type { RateLimits } from './auth/rate-limit.js';

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

  const perMinute = (name: string, fallback: number): number => {
    const raw = value(name);
    if (raw === undefined) return fallback;
    if (/^\d{1,9}$/.test(raw) && Number(raw) > 0) return Number(raw);
    problems.push(`${name} must be a positive integer, got "${raw}"`);
    return fallback;
  };
  const rateLimits: RateLimits = {
    query: perMinute('GPUX_RATE_QUERIES_PER_MINUTE', DEFAULT_RATE_LIMITS.query),
    create: perMinute('GPUX_RATE_ORDERS_PER_MINUTE', DEFAULT_RATE_LIMITS.create),
    cancel: perMinute('GPUX_RATE_CANCELS_PER_MINUTE', DEFAULT_RATE_LIMITS.cancel),
  };

  const provisioningTimeoutMs =
    perMinute('GPUX_PROVISIONING_TIMEOUT_SECONDS', DEFAULT_CONFIG.provisioningTimeoutMs / 1000) *
    1000;

  const captureWritesFile = value('GPUX_CAPTURE_WRITES');

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
  };
}
