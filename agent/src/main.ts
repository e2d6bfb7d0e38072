// `gpux agent` as its own process: settings from the environment and the
// command line, read once here; pino JSON lines on stdout; SIGTERM drains
// to exit 0 (D34). Only --help and a bad setting write plain text.

import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { pino } from 'pino';

import { AgentFatalError, startAgent } from './agent.js';
import type { AgentHandle } from './agent.js';
import { runCli } from './cli.js';
import { ConfigError } from './config.js';
import { loadAgentConfig } from './env-settings.js';
import type { AgentConfig } from './config.js';

/** `gpux agent [flags]`: runs until drained, then exits the process. */
export async function runAgent(
  args: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const answer = runCli(args);
  if (answer !== undefined) {
    process.stdout.write(answer.stdout);
    process.stderr.write(answer.stderr);
    process.exit(answer.exitCode);
  }

  let config: AgentConfig;
  try {
    config = loadAgentConfig(env, args);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // One line per problem, all of them at once.
    process.stderr.write(err.problems.map((p) => `gpux agent: ${p}\n`).join(''));
    process.exit(2);
  }

  const logger = pino({ level: config.logLevel, base: { service: 'gpux-agent' } });

  let agent: AgentHandle;
  try {
    agent = await startAgent(config, { logger });
  } catch (err) {
    if (!(err instanceof AgentFatalError)) throw err;
    logger.fatal(err.message);
    process.stderr.write(`gpux agent: ${err.message}\n`);
    process.exit(1);
  }

  let signals = 0;
  const drain = (signal: NodeJS.Signals): void => {
    // A second signal: the operator will not wait for work in flight.
    if (++signals > 1) process.exit(1);
    logger.info({ signal }, 'signal received');
    void agent.stop();
  };
  process.on('SIGTERM', drain);
  process.on('SIGINT', drain);

  try {
    await agent.done;
    process.exit(0);
  } catch (err) {
    logger.fatal({ err }, 'agent stopped');
    process.stderr.write(`gpux agent: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}

// Run when started as a program (node agent/dist/main.js), not when imported (cli/).
if (
  process.argv[1] !== undefined &&
  realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)
) {
  await runAgent();
}
