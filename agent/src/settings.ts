// The settings the agent will read from its environment (decisions D29, D34).
// Listed here first so `--help` and the future config loader share one source.

export interface SettingDoc {
  readonly name: string;
  readonly description: string;
}

export const AGENT_SETTINGS: readonly SettingDoc[] = [
  { name: 'EXCHANGE_GRPC_URL', description: "address of the exchange's gRPC endpoint" },
  { name: 'GPUX_TOKEN', description: "the provider's API token (scope: provider)" },
  { name: 'NATS_URL', description: 'NATS JetStream server the exchange publishes events to' },
  {
    name: 'KUBECONFIG',
    description: "kubeconfig of the provider's cluster; unset: in-cluster service account",
  },
  {
    name: 'PROVISIONER',
    description: 'kubernetes | simulated (default kubernetes)',
  },
];

export function helpText(): string {
  const width = Math.max(...AGENT_SETTINGS.map((s) => s.name.length));
  const lines = AGENT_SETTINGS.map((s) => `  ${s.name.padEnd(width)}  ${s.description}`);
  return [
    'gpux agent: runs on a provider cluster, provisions leases sold on the exchange.',
    '',
    'Usage: gpux agent [--help]',
    '',
    'Settings (environment):',
    ...lines,
    '',
  ].join('\n');
}
