// Options → defaults → compiled config (architecture.md, Temporal's worker
// options), every problem reported at once, one line each. main.ts gets the
// options from the environment and the command line (env-settings.ts);
// `gpux start` builds AgentOptions itself and compiles them with
// `inProcessBus: true`.

import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

import { MAX_DURATION_HOURS, isId, parseNatsCredentials, parsePositiveDollars } from '@gpux/shared';
import type { NatsCredentials } from '@gpux/shared';

export const PROVISIONER_KINDS = ['simulated', 'kubernetes'] as const;
export type ProvisionerKind = (typeof PROVISIONER_KINDS)[number];

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** What a caller may set; strings where the value is text in the environment too. */
export interface AgentOptions {
  readonly exchangeGrpcUrl?: string | undefined;
  readonly token?: string | undefined;
  readonly clusterId?: string | undefined;
  readonly natsUrl?: string | undefined;
  readonly natsCredsFile?: string | undefined;
  readonly provisioner?: string | undefined;
  /** host:port */
  readonly sshListen?: string | undefined;
  readonly sshAdvertiseHost?: string | undefined;
  /** Dollars per GPU-hour, as text ("2.50") so no float is ever involved (D1). */
  readonly askPrice?: string | undefined;
  readonly listHours?: number | undefined;
  readonly heartbeatSeconds?: number | undefined;
  readonly drainTimeoutSeconds?: number | undefined;
  readonly stateDir?: string | undefined;
  readonly simulatedAllowRemote?: boolean | undefined;
  readonly simulatedProvisionDelayMs?: number | undefined;
  readonly grpcCaFile?: string | undefined;
  readonly grpcCertFile?: string | undefined;
  readonly grpcKeyFile?: string | undefined;
  readonly logLevel?: string | undefined;
  readonly kubeconfig?: string | undefined;
  readonly kubePublicServer?: string | undefined;
  readonly workspaceImage?: string | undefined;
  readonly workspaceCommand?: string | undefined;
  /** host:port */
  readonly webhookListen?: string | undefined;
  readonly webhookCertFile?: string | undefined;
  readonly webhookKeyFile?: string | undefined;
  /** Not a setting: how often the agent compares its workspaces with the exchange (D30). */
  readonly reconcileIntervalMs?: number | undefined;
}

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

export interface ExchangeTls {
  readonly caPem: Buffer | undefined;
  readonly certPem: Buffer | undefined;
  readonly keyPem: Buffer | undefined;
}

/** PROVISIONER=kubernetes (issue 13). */
export interface KubernetesConfig {
  /** KUBECONFIG; undefined: the in-cluster service account. */
  readonly kubeconfigPath: string | undefined;
  /** GPUX_KUBE_PUBLIC_SERVER: the API server address put in lease kubeconfigs. */
  readonly publicServer: string;
  readonly workspaceImage: string;
  readonly workspaceCommand: string;
  readonly webhookListen: HostPort;
  readonly webhookCertPem: Buffer;
  readonly webhookKeyPem: Buffer;
}

export interface AgentConfig {
  /** A gRPC target, host:port. */
  readonly exchangeTarget: string;
  /** undefined: plain text (loopback and test set-ups). */
  readonly exchangeTls: ExchangeTls | undefined;
  readonly token: string;
  readonly clusterId: string;
  /** undefined only with an injected in-process bus (`gpux start`). */
  readonly natsUrl: string | undefined;
  /** NATS_CREDS read and checked: a .creds file or an nkey seed (deploy/nats/). */
  readonly natsCreds: NatsCredentials | undefined;
  readonly provisioner: ProvisionerKind;
  /** Set with PROVISIONER=kubernetes. */
  readonly kubernetes: KubernetesConfig | undefined;
  readonly sshListen: HostPort;
  readonly sshAdvertiseHost: string;
  /** undefined: no sells are listed. */
  readonly askCents: number | undefined;
  readonly listHours: number;
  readonly heartbeatIntervalMs: number;
  /** GPUX_DRAIN_TIMEOUT_SECONDS: how long a stop waits for lease work in flight. */
  readonly drainTimeoutMs: number;
  readonly stateDir: string;
  readonly simulatedAllowRemote: boolean;
  readonly simulatedProvisionDelayMs: number;
  readonly logLevel: LogLevel;
  readonly reconcileIntervalMs: number;
  /** A sell is withdrawn and listed again this long before it expires (D12). */
  readonly sellRenewBeforeMs: number;
  /** Deadline of one gRPC call to the exchange. */
  readonly grpcDeadlineMs: number;
}

export const DEFAULTS = {
  provisioner: 'kubernetes',
  sshListen: '127.0.0.1:2222',
  listHours: 168,
  heartbeatSeconds: 5,
  drainTimeoutSeconds: 30,
  stateDir: '.gpux/agent',
  simulatedAllowRemote: false,
  simulatedProvisionDelayMs: 0,
  logLevel: 'info',
  sellRenewBeforeMs: 15 * 60_000,
  grpcDeadlineMs: 10_000,
  workspaceImage: 'nvidia/cuda:12.4.1-base-ubuntu22.04',
  workspaceCommand: 'sleep infinity',
  webhookListen: '0.0.0.0:8443',
} as const;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'));
  }
}

export interface ConfigIo {
  readFile(path: string): Buffer;
  hostname(): string;
}

const REAL_IO: ConfigIo = { readFile: (p) => readFileSync(p), hostname };

export interface CompileContext {
  /**
   * `gpux start` runs the agent in the exchange's process with the
   * in-process bus injected; only then may NATS_URL be unset.
   */
  readonly inProcessBus?: boolean;
  readonly io?: ConfigIo;
}

/** `host:port`, `[v6]:port`; undefined when it is not one. */
export function parseHostPort(text: string): HostPort | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:[\]/]+)):(\d{1,5})$/.exec(text);
  if (m === null) return undefined;
  const port = Number(m[3]);
  if (port > 65_535) return undefined;
  return { host: m[1] ?? m[2] ?? '', port };
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::';
}

function between(
  problems: string[],
  name: string,
  v: number | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (v === undefined) return fallback;
  if (Number.isInteger(v) && v >= min && v <= max) return v;
  problems.push(`${name} must be a whole number from ${min} to ${max}, got ${v}`);
  return fallback;
}

/** Options + defaults → config; throws ConfigError with every problem. */
export function compileAgentConfig(
  options: AgentOptions,
  context: CompileContext = {},
  earlier: readonly string[] = [],
): AgentConfig {
  const problems = [...earlier];
  const io = context.io ?? REAL_IO;
  const read = (name: string, path: string | undefined): Buffer | undefined => {
    if (path === undefined) return undefined;
    try {
      return io.readFile(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      problems.push(`${name}: cannot read ${path} (${code})`);
      return undefined;
    }
  };

  // The exchange: host:port is plain text, https:// is TLS, a CA file implies TLS.
  let exchangeTarget = '';
  let tlsWanted = options.grpcCaFile !== undefined;
  const url = options.exchangeGrpcUrl;
  if (url === undefined) problems.push('EXCHANGE_GRPC_URL is required (host:port of the exchange)');
  else {
    const m = /^(?:(https?):\/\/)?([^/]+?)\/?$/.exec(url);
    const hp = m?.[2] === undefined ? undefined : parseHostPort(m[2]);
    if (m === null || hp === undefined) {
      problems.push(`EXCHANGE_GRPC_URL must be host:port or https://host:port, got "${url}"`);
    } else {
      exchangeTarget = hp.host.includes(':') ? `[${hp.host}]:${hp.port}` : `${hp.host}:${hp.port}`;
      if (m[1] === 'https') tlsWanted = true;
      if (m[1] === 'http' && options.grpcCaFile !== undefined) {
        problems.push('EXCHANGE_GRPC_URL is http:// but GPUX_GRPC_CA_FILE asks for TLS');
      }
    }
  }
  if ((options.grpcCertFile === undefined) !== (options.grpcKeyFile === undefined)) {
    problems.push('GPUX_GRPC_CERT_FILE and GPUX_GRPC_KEY_FILE go together: set both or neither');
  } else if (options.grpcCertFile !== undefined && !tlsWanted) {
    problems.push(
      'GPUX_GRPC_CERT_FILE needs TLS: use an https:// EXCHANGE_GRPC_URL or set GPUX_GRPC_CA_FILE',
    );
  }
  const caPem = read('GPUX_GRPC_CA_FILE', options.grpcCaFile);
  const certPem = read('GPUX_GRPC_CERT_FILE', options.grpcCertFile);
  const keyPem = read('GPUX_GRPC_KEY_FILE', options.grpcKeyFile);

  const token = options.token ?? '';
  if (options.token === undefined) problems.push("GPUX_TOKEN is required (the provider's token)");
  else if (!/^[\x21-\x7e]{16,512}$/.test(token)) {
    problems.push('GPUX_TOKEN must be 16 to 512 printable characters, no spaces');
  }

  const clusterId = options.clusterId ?? '';
  if (options.clusterId === undefined) problems.push('GPUX_CLUSTER_ID is required (cls_…)');
  else if (!isId('cls_', options.clusterId)) {
    problems.push(`GPUX_CLUSTER_ID must be a cluster id (cls_…), got "${clusterId}"`);
  }

  const natsUrl = options.natsUrl;
  if (natsUrl === undefined) {
    if (context.inProcessBus !== true) {
      problems.push(
        "NATS_URL is required: the exchange's in-process bus is reachable only from `gpux start`",
      );
    }
  } else if (!/^(nats|tls):\/\/([^@/\s]+@)?[^/\s:@]+(:\d{1,5})?\/?$/.test(natsUrl)) {
    problems.push(
      `NATS_URL must be nats://[user:password@]host[:port] or tls://…, got "${natsUrl}"`,
    );
  }
  let natsCreds: NatsCredentials | undefined;
  const credsText = read('NATS_CREDS', options.natsCredsFile);
  if (credsText !== undefined) {
    try {
      natsCreds = parseNatsCredentials(credsText.toString('utf8'));
    } catch (err) {
      problems.push(`NATS_CREDS ${options.natsCredsFile ?? ''}: ${(err as Error).message}`);
    }
  }

  let provisioner: ProvisionerKind = DEFAULTS.provisioner;
  if (options.provisioner !== undefined) {
    const found = PROVISIONER_KINDS.find((k) => k === options.provisioner);
    if (found === undefined) {
      problems.push(`PROVISIONER must be simulated or kubernetes, got "${options.provisioner}"`);
    } else provisioner = found;
  }
  const provisionerKnown = options.provisioner === undefined || provisioner === options.provisioner;

  let kubernetes: KubernetesConfig | undefined;
  if (provisioner === 'kubernetes' && provisionerKnown) {
    const publicServer = options.kubePublicServer ?? '';
    if (options.kubePublicServer === undefined) {
      problems.push(
        "GPUX_KUBE_PUBLIC_SERVER is required with PROVISIONER=kubernetes (https://host:port of the cluster's API server as customers reach it)",
      );
    } else if (!/^https:\/\/[^\s/?#@]+(\/[^\s?#]*)?$/.test(publicServer)) {
      problems.push(`GPUX_KUBE_PUBLIC_SERVER must be an https:// URL, got "${publicServer}"`);
    }
    let webhookListen = parseHostPort(DEFAULTS.webhookListen) as HostPort;
    if (options.webhookListen !== undefined) {
      const hp = parseHostPort(options.webhookListen);
      if (hp === undefined) {
        problems.push(`GPUX_WEBHOOK_LISTEN must be host:port, got "${options.webhookListen}"`);
      } else webhookListen = hp;
    }
    if (options.webhookCertFile === undefined || options.webhookKeyFile === undefined) {
      problems.push(
        'GPUX_WEBHOOK_CERT_FILE and GPUX_WEBHOOK_KEY_FILE are required with PROVISIONER=kubernetes (the admission webhook is served over HTTPS)',
      );
    }
    const webhookCertPem = read('GPUX_WEBHOOK_CERT_FILE', options.webhookCertFile);
    const webhookKeyPem = read('GPUX_WEBHOOK_KEY_FILE', options.webhookKeyFile);
    const workspaceImage = options.workspaceImage ?? DEFAULTS.workspaceImage;
    if (!/^[^\s]+$/.test(workspaceImage)) {
      problems.push(`GPUX_WORKSPACE_IMAGE must be an image reference, got "${workspaceImage}"`);
    }
    kubernetes = {
      kubeconfigPath: options.kubeconfig,
      publicServer: publicServer.replace(/\/$/, ''),
      workspaceImage,
      workspaceCommand: options.workspaceCommand ?? DEFAULTS.workspaceCommand,
      webhookListen,
      webhookCertPem: webhookCertPem ?? Buffer.alloc(0),
      webhookKeyPem: webhookKeyPem ?? Buffer.alloc(0),
    };
  }

  let sshListen = parseHostPort(DEFAULTS.sshListen) as HostPort;
  if (options.sshListen !== undefined) {
    const hp = parseHostPort(options.sshListen);
    if (hp === undefined) {
      problems.push(`GPUX_SSH_LISTEN must be host:port, got "${options.sshListen}"`);
    } else sshListen = hp;
  }
  const simulatedAllowRemote = options.simulatedAllowRemote ?? DEFAULTS.simulatedAllowRemote;
  if (provisioner === 'simulated' && !isLoopback(sshListen.host) && !simulatedAllowRemote) {
    problems.push(
      `GPUX_SSH_LISTEN is ${sshListen.host}, not loopback: the simulated provisioner's shells run as the agent's user, who can read its token; set GPUX_SIMULATED_ALLOW_REMOTE=1 to allow it`,
    );
  }
  const sshAdvertiseHost =
    options.sshAdvertiseHost ?? (isWildcard(sshListen.host) ? io.hostname() : sshListen.host);
  if (!/^[^\s@/]+$/.test(sshAdvertiseHost)) {
    problems.push(`GPUX_SSH_ADVERTISE_HOST must be a host name, got "${sshAdvertiseHost}"`);
  }

  let askCents: number | undefined;
  if (options.askPrice !== undefined) {
    try {
      askCents = parsePositiveDollars(options.askPrice, 'GPUX_ASK_PRICE');
      // The contract carries a price per GPU-hour as a uint32 of cents.
      if (askCents > 0xffff_ffff) {
        problems.push(`GPUX_ASK_PRICE must be at most $42,949,672.95, got "${options.askPrice}"`);
      }
    } catch (err) {
      problems.push(
        `GPUX_ASK_PRICE ${(err as Error).message.replace(/^GPUX_ASK_PRICE /, '')}, got "${options.askPrice}"`,
      );
    }
  }

  // D12: a sell expires 1 h before its window ends, so a 1 h window would
  // expire when it is listed.
  const listHours = between(
    problems,
    'GPUX_LIST_HOURS',
    options.listHours,
    DEFAULTS.listHours,
    2,
    MAX_DURATION_HOURS,
  );
  const heartbeatSeconds = between(
    problems,
    'GPUX_HEARTBEAT_SECONDS',
    options.heartbeatSeconds,
    DEFAULTS.heartbeatSeconds,
    1,
    300,
  );
  const drainTimeoutSeconds = between(
    problems,
    'GPUX_DRAIN_TIMEOUT_SECONDS',
    options.drainTimeoutSeconds,
    DEFAULTS.drainTimeoutSeconds,
    0,
    3600,
  );
  const simulatedProvisionDelayMs = between(
    problems,
    'GPUX_SIMULATED_PROVISION_DELAY_MS',
    options.simulatedProvisionDelayMs,
    DEFAULTS.simulatedProvisionDelayMs,
    0,
    600_000,
  );

  let logLevel: LogLevel = DEFAULTS.logLevel;
  if (options.logLevel !== undefined) {
    const found = LOG_LEVELS.find((l) => l === options.logLevel);
    if (found === undefined) {
      problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${options.logLevel}"`);
    } else logLevel = found;
  }

  if (problems.length > 0) throw new ConfigError(problems);
  const heartbeatIntervalMs = heartbeatSeconds * 1000;
  return {
    exchangeTarget,
    exchangeTls: tlsWanted ? { caPem, certPem, keyPem } : undefined,
    token,
    clusterId,
    natsUrl,
    natsCreds,
    provisioner,
    kubernetes,
    sshListen,
    sshAdvertiseHost,
    askCents,
    listHours,
    heartbeatIntervalMs,
    drainTimeoutMs: drainTimeoutSeconds * 1000,
    stateDir: options.stateDir ?? DEFAULTS.stateDir,
    simulatedAllowRemote,
    simulatedProvisionDelayMs,
    logLevel,
    // D30 "every few seconds": twice per heartbeat, never more often than every 2 s.
    reconcileIntervalMs: options.reconcileIntervalMs ?? Math.max(2_000, 2 * heartbeatIntervalMs),
    sellRenewBeforeMs: DEFAULTS.sellRenewBeforeMs,
    grpcDeadlineMs: DEFAULTS.grpcDeadlineMs,
  };
}
