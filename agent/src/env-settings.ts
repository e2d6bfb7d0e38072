// The environment and the command line as the agent's settings (main.ts
// reads them once, D34): flags mirror the variables (settings.ts), a flag
// wins, and text that is not what a setting takes is a problem reported
// with all the others.

import { readSettings } from '@gpux/shared';
import type { Env } from '@gpux/shared';

import { compileSettings } from './config.js';
import type { AgentConfig, CompileContext } from './config.js';
import { AGENT_SETTINGS } from './settings.js';

/** main.ts: the environment and the command line, read once, every problem at once. */
export function loadAgentConfig(
  env: Env,
  args: readonly string[],
  context: CompileContext = {},
): AgentConfig {
  const problems: string[] = [];
  const failed = new Set<string>();
  const inputs = readSettings(AGENT_SETTINGS, env, args, problems, failed);
  return compileSettings(inputs, undefined, context, problems, failed);
}
