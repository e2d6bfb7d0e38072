import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * Builds the `gpux` command (the exchange, the agent and what they depend on)
 * once before the e2e tests: some start `node exchange/dist/main.js`, some
 * the `gpux` binary itself (test/cli-help.test.ts).
 */
export default function setup(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-b', 'cli'], { cwd: root, stdio: 'inherit' });
}
