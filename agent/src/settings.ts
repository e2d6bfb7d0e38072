// The agent's settings (D29, D34): one table that `--help`, the config
// loader's flag parsing and the README's "The agent" table are checked
// against, so a setting cannot be documented in one place and missing in another.

export interface SettingDoc {
  /** The environment variable. */
  readonly name: string;
  /** What is used when it is unset; undefined: nothing (required, or optional without default). */
  readonly default?: string;
  readonly description: string;
}

export const AGENT_SETTINGS: readonly SettingDoc[] = [
  {
    name: 'EXCHANGE_GRPC_URL',
    description:
      "the exchange's gRPC endpoint, host:port (plain) or https://host:port (TLS); required",
  },
  {
    name: 'GPUX_TOKEN',
    description: "the provider's API token (scope provider, D24); required",
  },
  { name: 'GPUX_CLUSTER_ID', description: 'the cluster this agent speaks for (cls_…); required' },
  {
    name: 'NATS_URL',
    description:
      'NATS JetStream server the exchange publishes events to, nats://[user:pass@]host:port (tls://: TLS required); required (the in-process bus exists only inside `gpux start`)',
  },
  {
    name: 'NATS_CREDS',
    description:
      "the agent's NATS credentials: a file holding its user nkey seed (SU…, deploy/nats/) or a .creds file",
  },
  {
    name: 'PROVISIONER',
    default: 'kubernetes',
    description:
      'kubernetes | simulated (leases as namespaces of the Kubernetes cluster, or workspace directories on this host for demos and tests)',
  },
  {
    name: 'GPUX_SSH_LISTEN',
    default: '127.0.0.1:2222',
    description: 'host:port the SSH gateway listens on (port 0: a free one)',
  },
  {
    name: 'GPUX_SSH_ADVERTISE_HOST',
    default: 'the listen host (this hostname if that is 0.0.0.0 or ::)',
    description: 'the host name in the SSH endpoints reported to the exchange',
  },
  {
    name: 'GPUX_ASK_PRICE',
    description:
      'dollars per GPU-hour the free nodes are offered at, one sell per node; unset: the agent lists no sells',
  },
  {
    name: 'GPUX_LIST_HOURS',
    default: '168',
    description: 'each sell offers the window now … now + this many hours (2 to 720)',
  },
  {
    name: 'GPUX_HEARTBEAT_SECONDS',
    default: '5',
    description: 'heartbeat interval (1 to 300); the exchange marks nodes offline after 3 (D29)',
  },
  {
    name: 'GPUX_DRAIN_TIMEOUT_SECONDS',
    default: '30',
    description:
      'on SIGTERM, how long lease work in flight may take to finish (0 to 3600); what is unfinished then is taken up by reconciliation at the next start',
  },
  {
    name: 'GPUX_STATE_DIR',
    default: '.gpux/agent',
    description: 'workspaces, revoked leases, reports, status.json and the SSH host key',
  },
  {
    name: 'GPUX_SIMULATED_ALLOW_REMOTE',
    default: '0',
    description:
      '1: let the simulated provisioner listen for SSH on a non-loopback address (its shells run as the agent user)',
  },
  {
    name: 'GPUX_SIMULATED_PROVISION_DELAY_MS',
    default: '0',
    description: 'simulated provisioner: each provisioning takes this long (for tests)',
  },
  {
    name: 'GPUX_GRPC_CA_FILE',
    description: "PEM CA bundle to verify the exchange's certificate (implies TLS)",
  },
  {
    name: 'GPUX_GRPC_CERT_FILE',
    description: 'PEM client certificate for mutual TLS (with GPUX_GRPC_KEY_FILE)',
  },
  { name: 'GPUX_GRPC_KEY_FILE', description: 'PEM private key of GPUX_GRPC_CERT_FILE' },
  {
    name: 'KUBECONFIG',
    default: 'the in-cluster service account',
    description:
      "kubernetes: the agent's own kubeconfig file (one path), used to reach the cluster's API",
  },
  {
    name: 'GPUX_KUBE_PUBLIC_SERVER',
    description:
      "kubernetes: https://host:port of the cluster's API server as customers reach it, put in every lease kubeconfig; required",
  },
  {
    name: 'GPUX_WORKSPACE_IMAGE',
    default: 'nvidia/cuda:12.4.1-base-ubuntu22.04',
    description:
      "kubernetes: the image of each leased node's workspace pod (SSH sessions exec into it)",
  },
  {
    name: 'GPUX_WORKSPACE_COMMAND',
    default: 'sleep infinity',
    description: 'kubernetes: what the workspace pod runs, by /bin/sh -c',
  },
  {
    name: 'GPUX_WEBHOOK_LISTEN',
    default: '0.0.0.0:8443',
    description:
      'kubernetes: host:port the admission webhook (pod placement on the lease nodes) listens on, HTTPS',
  },
  {
    name: 'GPUX_WEBHOOK_CERT_FILE',
    description: "kubernetes: PEM certificate of the admission webhook's HTTPS; required",
  },
  {
    name: 'GPUX_WEBHOOK_KEY_FILE',
    description: 'kubernetes: PEM private key of GPUX_WEBHOOK_CERT_FILE; required',
  },
  { name: 'LOG_LEVEL', default: 'info', description: 'fatal … trace, or silent' },
];

/** `GPUX_SSH_LISTEN` → `--ssh-listen`: the `GPUX_` prefix dropped, lower case, `-` for `_`. */
export function flagOf(name: string): string {
  return `--${name
    .replace(/^GPUX_/, '')
    .toLowerCase()
    .replace(/_/g, '-')}`;
}

/** Words of `text` in lines of at most `width` characters. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines;
}

export function helpText(): string {
  const rows = AGENT_SETTINGS.flatMap((s) => [
    `  ${s.name}, ${flagOf(s.name)}${s.default === undefined ? '' : `  [default: ${s.default}]`}`,
    ...wrap(s.description, 72).map((l) => `      ${l}`),
  ]);
  return [
    'gpux agent: runs beside a provider cluster, keeps its free nodes listed on the',
    'exchange and provisions the leases sold on it.',
    '',
    'Usage: gpux agent [--help] [--<flag> <value> | --<flag>=<value> …]',
    '',
    'Settings: environment variables, or their flags (a flag wins over its',
    'variable). Prefer the environment for GPUX_TOKEN: flags show in `ps`.',
    '',
    ...rows,
    '',
    'SIGTERM drains: no new events are taken, lease work in flight gets',
    'GPUX_DRAIN_TIMEOUT_SECONDS to finish (the rest waits for the next start), exit 0.',
    '',
  ].join('\n');
}
