import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import type * as BuildApp from '../exchange/src/console/build-app.js';

type ConsoleBuild = typeof BuildApp;

const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * Builds the `gpux` command (the exchange, the agent and what they depend on)
 * once before the e2e tests: some start `node exchange/dist/main.js`, some
 * the `gpux` binary itself (test/cli-help.test.ts). Then the console.
 */
export default async function setup(): Promise<void> {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-b', 'cli'], { cwd: root, stdio: 'inherit' });
  // The console the exchange serves at /console (docs/console.md), with
  // Vite's build() as `npm start` runs it; kept when newer than its sources.
  const built = new URL('../exchange/dist/console/build-app.js', import.meta.url).href;
  const { buildConsole } = (await import(built)) as ConsoleBuild;
  await buildConsole();
}
