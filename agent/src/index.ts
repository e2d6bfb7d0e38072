export { runCli } from './cli.js';
export type { CliResult } from './cli.js';
export { AGENT_SETTINGS, helpText } from './settings.js';
export type { SettingDoc } from './settings.js';
