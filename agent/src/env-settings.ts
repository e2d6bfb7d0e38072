// The environment and the command line as agent options (main.ts reads
// them once, D34): flags mirror the variables, a flag wins, and text that is
// not what a setting takes is a problem reported with all the others.

import { compileAgentConfig } from './config.js';
import type { AgentConfig, AgentOptions, CompileContext } from './config.js';
import { AGENT_SETTINGS, flagOf } from './settings.js';

type Env = Readonly<Record<string, string | undefined>>;

/**
 * `--ssh-listen 1.2.3.4:22` and `--ssh-listen=…` into environment names;
 * unknown flags and flags without a value are problems.
 */
export function parseFlags(args: readonly string[]): { values: Env; problems: string[] } {
  const byFlag = new Map(AGENT_SETTINGS.map((s) => [flagOf(s.name), s.name]));
  const values: Record<string, string> = {};
  const problems: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    const eq = arg.indexOf('=');
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    const name = byFlag.get(flag);
    if (name === undefined) {
      problems.push(`unknown argument "${arg}" (see --help)`);
      continue;
    }
    let value: string | undefined;
    if (eq !== -1) value = arg.slice(eq + 1);
    else if (i + 1 < args.length && !(args[i + 1] ?? '').startsWith('--')) value = args[++i];
    if (value === undefined) problems.push(`${flag} needs a value`);
    else values[name] = value;
  }
  return { values, problems };
}

/** Environment (and flags, which win) → options; text that is not a number is a problem. */
export function optionsFromEnv(env: Env, problems: string[]): AgentOptions {
  const value = (name: string): string | undefined => {
    const v = env[name]?.trim();
    return v === undefined || v === '' ? undefined : v;
  };
  const integer = (name: string): number | undefined => {
    const raw = value(name);
    if (raw === undefined) return undefined;
    if (/^\d{1,9}$/.test(raw)) return Number(raw);
    problems.push(`${name} must be a whole number, got "${raw}"`);
    return undefined;
  };
  const flag = (name: string): boolean | undefined => {
    const raw = value(name);
    if (raw === undefined) return undefined;
    if (raw === '1' || raw === 'true') return true;
    if (raw === '0' || raw === 'false') return false;
    problems.push(`${name} must be 1, true, 0 or false, got "${raw}"`);
    return undefined;
  };
  return {
    exchangeGrpcUrl: value('EXCHANGE_GRPC_URL'),
    token: value('GPUX_TOKEN'),
    clusterId: value('GPUX_CLUSTER_ID'),
    natsUrl: value('NATS_URL'),
    natsCredsFile: value('NATS_CREDS'),
    provisioner: value('PROVISIONER'),
    sshListen: value('GPUX_SSH_LISTEN'),
    sshAdvertiseHost: value('GPUX_SSH_ADVERTISE_HOST'),
    askPrice: value('GPUX_ASK_PRICE'),
    listHours: integer('GPUX_LIST_HOURS'),
    heartbeatSeconds: integer('GPUX_HEARTBEAT_SECONDS'),
    drainTimeoutSeconds: integer('GPUX_DRAIN_TIMEOUT_SECONDS'),
    stateDir: value('GPUX_STATE_DIR'),
    simulatedAllowRemote: flag('GPUX_SIMULATED_ALLOW_REMOTE'),
    simulatedProvisionDelayMs: integer('GPUX_SIMULATED_PROVISION_DELAY_MS'),
    grpcCaFile: value('GPUX_GRPC_CA_FILE'),
    grpcCertFile: value('GPUX_GRPC_CERT_FILE'),
    grpcKeyFile: value('GPUX_GRPC_KEY_FILE'),
    logLevel: value('LOG_LEVEL'),
    kubeconfig: value('KUBECONFIG'),
    kubePublicServer: value('GPUX_KUBE_PUBLIC_SERVER'),
    workspaceImage: value('GPUX_WORKSPACE_IMAGE'),
    workspaceCommand: value('GPUX_WORKSPACE_COMMAND'),
    webhookListen: value('GPUX_WEBHOOK_LISTEN'),
    webhookCertFile: value('GPUX_WEBHOOK_CERT_FILE'),
    webhookKeyFile: value('GPUX_WEBHOOK_KEY_FILE'),
  };
}

/** main.ts: the environment and the command line, read once, every problem at once. */
export function loadAgentConfig(
  env: Env,
  args: readonly string[],
  context: CompileContext = {},
): AgentConfig {
  const flags = parseFlags(args);
  const problems = [...flags.problems];
  const options = optionsFromEnv({ ...env, ...flags.values }, problems);
  return compileAgentConfig(options, context, problems);
}
