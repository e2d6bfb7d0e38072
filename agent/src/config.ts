// Options → defaults → compiled config (Temporal's worker options), every
// problem reported at once, one line each. Each setting, its parser and its
// default are in settings.ts; main.ts gets the options from the environment
// and the command line (env-settings.ts); `gpux start` builds AgentOptions
// itself and compiles them with `inProcessBus: true`. What is checked here
// is what involves more than one setting, or a file.

import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

import {
  ConfigError,
  checkInputs,
  inTableOrder,
  parseNatsCredentials,
  withDefaults,
} from '@gpux/shared';
import type { LogLevel, NatsCredentials, SettingInputs, SettingValues } from '@gpux/shared';

import {
  AGENT_SETTINGS,
  PROVISIONER_KINDS,
  askCentsOf,
  parseExchangeUrl,
  parseHostPort,
} from './settings.js';
import type { HostPort, ProvisionerKind } from './settings.js';

// Where they were before the settings table; shared with the exchange.
export { ConfigError, LOG_LEVELS } from '@gpux/shared';
export type { LogLevel } from '@gpux/shared';
export { PROVISIONER_KINDS, parseHostPort };
export type { HostPort, ProvisionerKind };

/**
 * What a caller may set: the settings (settings.ts), as their parsers give
 * them back (text where the value is text in the environment too).
 */
export type AgentOptions = SettingInputs<typeof AGENT_SETTINGS> & {
  /** Not a setting: how often the agent compares its workspaces with the exchange (D30). */
  readonly reconcileIntervalMs?: number | undefined;
};

export interface ExchangeTls {
  readonly caPem: Buffer | undefined;
  readonly certPem: Buffer | undefined;
  readonly keyPem: Buffer | undefined;
  /** Where they were read from: the agent reads them again when they change (tls-files.ts). */
  readonly files?: {
    readonly ca: string | undefined;
    readonly cert: string | undefined;
    readonly key: string | undefined;
  };
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
  /** GPUX_WEBHOOK_CERT_FILE and GPUX_WEBHOOK_KEY_FILE: read again when they change (tls-files.ts). */
  readonly webhookCertFile: string;
  readonly webhookKeyFile: string;
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
  /** GPUX_METRICS_LISTEN: GET /metrics (metrics.ts); undefined: none. */
  readonly metricsListen: HostPort | undefined;
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

/** What the agent is configured with that is not a setting. */
export const DEFAULTS = {
  sellRenewBeforeMs: 15 * 60_000,
  grpcDeadlineMs: 10_000,
} as const;

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

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::';
}

/**
 * Options given in code → config: each option is checked by its setting's
 * parser first (as the environment's text is); throws ConfigError with
 * every problem.
 */
export function compileAgentConfig(
  options: AgentOptions,
  context: CompileContext = {},
  earlier: readonly string[] = [],
): AgentConfig {
  const problems = [...earlier];
  const failed = new Set<string>();
  const inputs = checkInputs(AGENT_SETTINGS, options, problems, failed);
  return compileSettings(inputs, options.reconcileIntervalMs, context, problems, failed);
}

/**
 * Settings already parsed (env-settings.ts, compileAgentConfig) → config.
 * `failed`: the settings whose text was refused, so that no rule is checked
 * against their defaults in their place.
 */
export function compileSettings(
  inputs: SettingInputs<typeof AGENT_SETTINGS>,
  reconcileIntervalMs: number | undefined,
  context: CompileContext,
  problems: string[],
  failed: ReadonlySet<string>,
): AgentConfig {
  const v: SettingValues<typeof AGENT_SETTINGS> = withDefaults(AGENT_SETTINGS, inputs);
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
  let tlsWanted = v.grpcCaFile !== undefined;
  const exchange =
    v.exchangeGrpcUrl === undefined ? undefined : parseExchangeUrl(v.exchangeGrpcUrl);
  if (v.exchangeGrpcUrl === undefined && !failed.has('exchangeGrpcUrl')) {
    problems.push('EXCHANGE_GRPC_URL is required (host:port of the exchange)');
  }
  if (exchange?.scheme === 'https') tlsWanted = true;
  if (exchange?.scheme === 'http' && v.grpcCaFile !== undefined) {
    problems.push('EXCHANGE_GRPC_URL is http:// but GPUX_GRPC_CA_FILE asks for TLS');
  }
  if ((v.grpcCertFile === undefined) !== (v.grpcKeyFile === undefined)) {
    problems.push('GPUX_GRPC_CERT_FILE and GPUX_GRPC_KEY_FILE go together: set both or neither');
  } else if (v.grpcCertFile !== undefined && !tlsWanted && !failed.has('exchangeGrpcUrl')) {
    problems.push(
      'GPUX_GRPC_CERT_FILE needs TLS: use an https:// EXCHANGE_GRPC_URL or set GPUX_GRPC_CA_FILE',
    );
  }
  const caPem = read('GPUX_GRPC_CA_FILE', v.grpcCaFile);
  const certPem = read('GPUX_GRPC_CERT_FILE', v.grpcCertFile);
  const keyPem = read('GPUX_GRPC_KEY_FILE', v.grpcKeyFile);

  if (v.token === undefined && !failed.has('token')) {
    problems.push("GPUX_TOKEN is required (the provider's token)");
  }
  if (v.clusterId === undefined && !failed.has('clusterId')) {
    problems.push('GPUX_CLUSTER_ID is required (cls_…)');
  }
  if (v.natsUrl === undefined && !failed.has('natsUrl') && context.inProcessBus !== true) {
    problems.push(
      "NATS_URL is required: the exchange's in-process bus is reachable only from `gpux start`",
    );
  }
  let natsCreds: NatsCredentials | undefined;
  const credsText = read('NATS_CREDS', v.natsCredsFile);
  if (credsText !== undefined) {
    try {
      natsCreds = parseNatsCredentials(credsText.toString('utf8'));
    } catch (err) {
      problems.push(`NATS_CREDS ${v.natsCredsFile ?? ''}: ${(err as Error).message}`);
    }
  }

  let kubernetes: KubernetesConfig | undefined;
  if (v.provisioner === 'kubernetes' && !failed.has('provisioner')) {
    if (v.kubePublicServer === undefined && !failed.has('kubePublicServer')) {
      problems.push(
        "GPUX_KUBE_PUBLIC_SERVER is required with PROVISIONER=kubernetes (https://host:port of the cluster's API server as customers reach it)",
      );
    }
    if (v.webhookCertFile === undefined || v.webhookKeyFile === undefined) {
      problems.push(
        'GPUX_WEBHOOK_CERT_FILE and GPUX_WEBHOOK_KEY_FILE are required with PROVISIONER=kubernetes (the admission webhook is served over HTTPS)',
      );
    }
    const webhookCertPem = read('GPUX_WEBHOOK_CERT_FILE', v.webhookCertFile);
    const webhookKeyPem = read('GPUX_WEBHOOK_KEY_FILE', v.webhookKeyFile);
    kubernetes = {
      kubeconfigPath: v.kubeconfig,
      publicServer: (v.kubePublicServer ?? '').replace(/\/$/, ''),
      workspaceImage: v.workspaceImage,
      workspaceCommand: v.workspaceCommand,
      webhookListen: parseHostPort(v.webhookListen) as HostPort,
      webhookCertPem: webhookCertPem ?? Buffer.alloc(0),
      webhookKeyPem: webhookKeyPem ?? Buffer.alloc(0),
      webhookCertFile: v.webhookCertFile ?? '',
      webhookKeyFile: v.webhookKeyFile ?? '',
    };
  }

  // The table's parser checked it (or it is the default).
  const sshListen = parseHostPort(v.sshListen) as HostPort;
  if (
    v.provisioner === 'simulated' &&
    !isLoopback(sshListen.host) &&
    !v.simulatedAllowRemote &&
    !failed.has('simulatedAllowRemote')
  ) {
    problems.push(
      `GPUX_SSH_LISTEN is ${sshListen.host}, not loopback: the simulated provisioner's shells run as the agent's user, who can read its token; set GPUX_SIMULATED_ALLOW_REMOTE=1 to allow it`,
    );
  }
  const sshAdvertiseHost =
    v.sshAdvertiseHost ?? (isWildcard(sshListen.host) ? io.hostname() : sshListen.host);

  if (problems.length > 0) throw new ConfigError(inTableOrder(AGENT_SETTINGS, problems));
  const heartbeatIntervalMs = v.heartbeatSeconds * 1000;
  return {
    exchangeTarget: exchange?.target ?? '',
    exchangeTls: tlsWanted
      ? {
          caPem,
          certPem,
          keyPem,
          files: { ca: v.grpcCaFile, cert: v.grpcCertFile, key: v.grpcKeyFile },
        }
      : undefined,
    token: v.token ?? '',
    clusterId: v.clusterId ?? '',
    natsUrl: v.natsUrl,
    natsCreds,
    provisioner: v.provisioner,
    kubernetes,
    sshListen,
    sshAdvertiseHost,
    metricsListen: v.metricsListen === undefined ? undefined : parseHostPort(v.metricsListen),
    askCents: v.askPrice === undefined ? undefined : askCentsOf(v.askPrice),
    listHours: v.listHours,
    heartbeatIntervalMs,
    drainTimeoutMs: v.drainTimeoutSeconds * 1000,
    stateDir: v.stateDir,
    simulatedAllowRemote: v.simulatedAllowRemote,
    simulatedProvisionDelayMs: v.simulatedProvisionDelayMs,
    logLevel: v.logLevel,
    // D30 "every few seconds": twice per heartbeat, never more often than every 2 s.
    reconcileIntervalMs: reconcileIntervalMs ?? Math.max(2_000, 2 * heartbeatIntervalMs),
    sellRenewBeforeMs: DEFAULTS.sellRenewBeforeMs,
    grpcDeadlineMs: DEFAULTS.grpcDeadlineMs,
  };
}
