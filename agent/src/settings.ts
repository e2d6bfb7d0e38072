// The agent's settings (issue 20): the one table env-settings.ts reads the
// environment and the command line by, config.ts takes its defaults and
// checks options given in code by, `gpux agent --help` prints and the
// README's "The agent" table is generated from (npm run gen:readme;
// cli/src/readme-settings.test.ts fails when they differ). Each parser
// gives back what AgentOptions holds (text, a number, a flag), checked;
// config.ts puts the settings together into the AgentConfig.

import {
  MAX_DURATION_HOURS,
  SettingProblem,
  integer,
  isId,
  logLevel,
  matching,
  natsUrl,
  onOff,
  oneOf,
  parsePositiveDollars,
  setting,
  settingsHelp,
  text,
} from '@gpux/shared';
import type { Parser } from '@gpux/shared';

export { flagOf } from '@gpux/shared';

export const PROVISIONER_KINDS = ['simulated', 'kubernetes'] as const;
export type ProvisionerKind = (typeof PROVISIONER_KINDS)[number];

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** `host:port`, `[v6]:port`; undefined when it is not one. */
export function parseHostPort(t: string): HostPort | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:[\]/]+)):(\d{1,5})$/.exec(t);
  if (m === null) return undefined;
  const port = Number(m[3]);
  if (port > 65_535) return undefined;
  return { host: m[1] ?? m[2] ?? '', port };
}

const hostPort: Parser<string> = (t) => {
  if (parseHostPort(t) === undefined) throw new SettingProblem('must be host:port');
  return t;
};

/** EXCHANGE_GRPC_URL taken apart: host:port is plain text, https:// is TLS. */
export function parseExchangeUrl(
  t: string,
): { readonly target: string; readonly scheme: 'http' | 'https' | undefined } | undefined {
  const m = /^(?:(https?):\/\/)?([^/]+?)\/?$/.exec(t);
  const hp = m?.[2] === undefined ? undefined : parseHostPort(m[2]);
  if (m === null || hp === undefined) return undefined;
  return {
    target: hp.host.includes(':') ? `[${hp.host}]:${hp.port}` : `${hp.host}:${hp.port}`,
    scheme: m[1] === 'https' ? 'https' : m[1] === 'http' ? 'http' : undefined,
  };
}

const exchangeUrl: Parser<string> = (t) => {
  if (parseExchangeUrl(t) === undefined)
    throw new SettingProblem('must be host:port or https://host:port');
  return t;
};

/** The contract carries a price per GPU-hour as a uint32 of cents. */
const MAX_ASK_CENTS = 0xffff_ffff;

/** Dollars as text ("2.50"), so no float is ever involved (D1): exact cents, positive. */
export function askCentsOf(t: string): number {
  let cents: number;
  try {
    cents = parsePositiveDollars(t, 'GPUX_ASK_PRICE');
  } catch (err) {
    throw new SettingProblem((err as Error).message.replace(/^GPUX_ASK_PRICE /, ''));
  }
  if (cents > MAX_ASK_CENTS) throw new SettingProblem('must be at most $42,949,672.95');
  return cents;
}

const askPrice: Parser<string> = (t) => {
  askCentsOf(t);
  return t;
};

export const AGENT_SETTINGS = [
  setting('exchangeGrpcUrl', {
    name: 'EXCHANGE_GRPC_URL',
    parse: exchangeUrl,
    shownDefault: 'required',
    description:
      "the exchange's gRPC endpoint: `host:port` (plain text) or `https://host:port` (TLS)",
  }),
  setting('token', {
    name: 'GPUX_TOKEN',
    parse: matching(/^[\x21-\x7e]{16,512}$/, '16 to 512 printable characters, no spaces'),
    secret: true,
    shownDefault: 'required',
    description:
      "the provider's API token (scope `provider`); prefer the environment, flags show in `ps`",
  }),
  setting('clusterId', {
    name: 'GPUX_CLUSTER_ID',
    parse: (t) => {
      if (!isId('cls_', t)) throw new SettingProblem('must be a cluster id (cls_…)');
      return t;
    },
    shownDefault: 'required',
    description: 'the cluster this agent speaks for (`cls_…`)',
  }),
  setting('natsUrl', {
    name: 'NATS_URL',
    parse: natsUrl,
    secret: true,
    shownDefault: 'required',
    description:
      "`nats://[user:pass@]host:port` (or `tls://…`: TLS required) of the JetStream server; only an agent inside `gpux start` uses the exchange's in-process bus instead",
  }),
  setting('natsCredsFile', {
    name: 'NATS_CREDS',
    parse: text,
    description:
      "the agent's NATS credentials: a file with its user nkey seed (`SU…`, see `deploy/nats/`) or a `.creds` file",
  }),
  setting('provisioner', {
    name: 'PROVISIONER',
    parse: oneOf(PROVISIONER_KINDS),
    default: 'kubernetes',
    description:
      '`simulated` or `kubernetes` (a lease is a namespace of the cluster, see below; simulated: workspace directories on this host, for demos and tests)',
  }),
  setting('sshListen', {
    name: 'GPUX_SSH_LISTEN',
    parse: hostPort,
    default: '127.0.0.1:2222',
    description:
      'where the SSH gateway listens (`host:port`, `[v6]:port`; port 0 picks a free one)',
  }),
  setting('sshAdvertiseHost', {
    name: 'GPUX_SSH_ADVERTISE_HOST',
    parse: matching(/^[^\s@/]+$/, 'a host name'),
    shownDefault: 'the listen host',
    description:
      "the host in the reported endpoints `<ssh_user>@<host>:<port>`; this machine's name when listening on `0.0.0.0` or `::`",
  }),
  setting('metricsListen', {
    name: 'GPUX_METRICS_LISTEN',
    parse: hostPort,
    description:
      'where `GET /metrics` (Prometheus text) and the probes `GET /healthz` and `GET /readyz` listen (`host:port`); unset: none of them. It has no token: keep it on a private address',
  }),
  setting('askPrice', {
    name: 'GPUX_ASK_PRICE',
    parse: askPrice,
    description:
      'dollars per GPU-hour for the free nodes, one sell per node; unset: the agent does not sell, and withdraws the open sells it listed itself (sells listed by hand stay)',
  }),
  // D12: a sell expires 1 h before its window ends, so a 1 h window would
  // expire when it is listed.
  setting('listHours', {
    name: 'GPUX_LIST_HOURS',
    parse: integer(2, MAX_DURATION_HOURS),
    default: 168,
    description: `each sell offers now … now + this many hours (2 to ${MAX_DURATION_HOURS})`,
  }),
  // D29: nodes go offline after 3 missed heartbeats.
  setting('heartbeatSeconds', {
    name: 'GPUX_HEARTBEAT_SECONDS',
    parse: integer(1, 300),
    default: 5,
    description:
      'heartbeat interval (1 to 300), declared at attach; the exchange marks nodes offline after 3 missed',
  }),
  setting('drainTimeoutSeconds', {
    name: 'GPUX_DRAIN_TIMEOUT_SECONDS',
    parse: integer(0, 3600),
    default: 30,
    description:
      'on SIGTERM, how long lease work in flight may take to finish (0 to 3600); what is unfinished then is taken up by reconciliation at the next start',
  }),
  setting('stateDir', {
    name: 'GPUX_STATE_DIR',
    parse: text,
    default: '.gpux/agent',
    description:
      'workspaces, revoked leases, reports, the sells it listed (`sells.json`), `status.json`, the SSH host key',
  }),
  setting('simulatedAllowRemote', {
    name: 'GPUX_SIMULATED_ALLOW_REMOTE',
    parse: onOff,
    default: false,
    description:
      "`1`: let the simulated provisioner's SSH listen on a non-loopback address (its shells run as the agent's user, who can read its token)",
  }),
  setting('simulatedProvisionDelayMs', {
    name: 'GPUX_SIMULATED_PROVISION_DELAY_MS',
    parse: integer(0, 600_000),
    default: 0,
    description: 'the simulated provisioner takes this long per lease (tests interrupt it)',
  }),
  setting('grpcCaFile', {
    name: 'GPUX_GRPC_CA_FILE',
    parse: text,
    description: 'PEM CA to verify the exchange (implies TLS)',
  }),
  setting('grpcCertFile', {
    name: 'GPUX_GRPC_CERT_FILE',
    parse: text,
    description: 'PEM client certificate for mutual TLS, with `GPUX_GRPC_KEY_FILE`',
  }),
  setting('grpcKeyFile', {
    name: 'GPUX_GRPC_KEY_FILE',
    parse: text,
    description: 'PEM private key of the client certificate',
  }),
  setting('kubeconfig', {
    name: 'KUBECONFIG',
    parse: text,
    shownDefault: 'in-cluster',
    description:
      "kubernetes: the agent's own kubeconfig (one file); unset: the in-cluster service account",
  }),
  setting('kubePublicServer', {
    name: 'GPUX_KUBE_PUBLIC_SERVER',
    parse: matching(/^https:\/\/[^\s/?#@]+(\/[^\s?#]*)?$/, 'an https:// URL'),
    shownDefault: 'required',
    description:
      'kubernetes: `https://host:port` of the API server as customers reach it, put in every lease kubeconfig',
  }),
  setting('workspaceImage', {
    name: 'GPUX_WORKSPACE_IMAGE',
    parse: matching(/^\S+$/, 'an image reference'),
    default: 'nvidia/cuda:12.4.1-base-ubuntu22.04',
    description:
      "kubernetes: image of each leased node's workspace pod (SSH sessions exec into it)",
  }),
  setting('workspaceCommand', {
    name: 'GPUX_WORKSPACE_COMMAND',
    parse: text,
    default: 'sleep infinity',
    description: 'kubernetes: what the workspace pod runs (`/bin/sh -c`)',
  }),
  setting('webhookListen', {
    name: 'GPUX_WEBHOOK_LISTEN',
    parse: hostPort,
    default: '0.0.0.0:8443',
    description: 'kubernetes: where the pod-placement admission webhook listens (HTTPS)',
  }),
  setting('webhookCertFile', {
    name: 'GPUX_WEBHOOK_CERT_FILE',
    parse: text,
    shownDefault: 'required',
    description: "kubernetes: PEM certificate of the webhook's HTTPS",
  }),
  setting('webhookKeyFile', {
    name: 'GPUX_WEBHOOK_KEY_FILE',
    parse: text,
    shownDefault: 'required',
    description: 'kubernetes: PEM private key of `GPUX_WEBHOOK_CERT_FILE`',
  }),
  setting('logLevel', {
    name: 'LOG_LEVEL',
    parse: logLevel,
    default: 'info',
    description: '`fatal` … `trace`, or `silent`',
  }),
] as const;

/** `gpux agent --help`. */
export function helpText(): string {
  return [
    'gpux agent: runs beside a provider cluster, keeps its free nodes listed on the',
    'exchange and provisions the leases sold on it.',
    '',
    'Usage: gpux agent [--help] [--<flag> <value> | --<flag>=<value> …]',
    '',
    'Settings: environment variables, or their flags (a flag wins over its',
    'variable). Prefer the environment for GPUX_TOKEN: flags show in `ps`.',
    '',
    ...settingsHelp(AGENT_SETTINGS),
    '',
    'SIGTERM drains: no new events are taken, lease work in flight gets',
    'GPUX_DRAIN_TIMEOUT_SECONDS to finish (the rest waits for the next start), exit 0.',
    '',
  ].join('\n');
}

type AgentSetting = (typeof AGENT_SETTINGS)[number];

/** One setting of the table, by its key (`gpux start` takes a few for its demo agent). */
export function agentSetting<K extends AgentSetting['key']>(
  key: K,
): Extract<AgentSetting, { readonly key: K }> {
  const found = AGENT_SETTINGS.find(
    (s): s is Extract<AgentSetting, { readonly key: K }> => s.key === key,
  );
  if (found === undefined) throw new Error(`no agent setting ${key}`);
  return found;
}
