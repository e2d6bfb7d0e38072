// @gpux/agent: the provider-side agent. `startAgent` runs it in this
// process (main.ts, or `gpux start` with the in-process bus); the rest is
// what callers need to configure it.

export { runCli } from './cli.js';
export type { CliResult } from './cli.js';
export { AGENT_SETTINGS, agentSetting, flagOf, helpText } from './settings.js';
export {
  ConfigError,
  DEFAULTS,
  LOG_LEVELS,
  PROVISIONER_KINDS,
  compileAgentConfig,
} from './config.js';
export { loadAgentConfig } from './env-settings.js';
export type { AgentConfig, AgentOptions, LogLevel, ProvisionerKind } from './config.js';
export { AGENT_VERSION, AgentFatalError, startAgent } from './agent.js';
export type { AgentDeps, AgentHandle } from './agent.js';
export type { AgentPhase, AgentStatus } from './agent-status.js';
export type { ExchangeApi } from './exchange/exchange-client.js';
export { LeaseDirectory } from './lease-directory.js';
export type { SshGatewayPort } from './ssh-port.js';
export type {
  LeaseAccess,
  NodeAccess,
  ProvisionResult,
  Provisioner,
  Workspace,
  WorkspaceTarget,
} from './provisioner/provisioner.js';
export type { LeaseSpec } from './provisioner/lease-spec.js';
export type { Logger } from './logger.js';
export { runAgent } from './main.js';
