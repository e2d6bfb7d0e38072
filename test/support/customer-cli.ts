// gpux as a customer of a ProviderStack: each account with a config
// directory and a HOME of its own under the stack's scratch directory,
// the exchange and its token from the environment (or its own login).

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { expect } from 'vitest';

import { runGpux } from './gpux-cli.js';
import type { GpuxRun } from './gpux-cli.js';
import type { Account, ProviderStack } from './provider-stack.js';

/** The account's own directories: XDG_CONFIG_HOME and HOME. */
export function homeOf(stack: ProviderStack, who: Account): { config: string; home: string } {
  const home = join(stack.dir, `home-${who.accountId}`);
  mkdirSync(home, { recursive: true });
  return { config: join(home, '.config'), home };
}

/** The environment of gpux as `who`: the exchange and its token, its own directories. */
export function envOf(stack: ProviderStack, who: Account, loggedIn = false): NodeJS.ProcessEnv {
  const { config, home } = homeOf(stack, who);
  return {
    XDG_CONFIG_HOME: config,
    HOME: home,
    ...(loggedIn ? {} : { GPUX_URL: stack.url, GPUX_API_TOKEN: who.token }),
  };
}

/** A gpux runner for `stack`: `gpux(who, ...args)`. */
export function customerCli(stack: () => ProviderStack) {
  return (who: Account, ...args: string[]): Promise<GpuxRun> => runGpux(args, envOf(stack(), who));
}

/** The run succeeded: its stdout as JSON. */
export function jsonOf(r: GpuxRun): Record<string, unknown> {
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}
