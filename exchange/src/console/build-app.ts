// Builds the console (exchange/console: Preact, uPlot) with Vite into
// exchange/dist/console-app, where the exchange serves it
// (console/static-files.ts). Run by `npm run build`, `npm start` and the
// end-to-end tests' global setup; a build newer than every source file is
// kept, so a start after the first costs nothing.

import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { CONSOLE_APP_DIR } from './static-files.js';

/** exchange/console, from src/console and dist/console alike. */
export const CONSOLE_SOURCE_DIR = fileURLToPath(new URL('../../console/', import.meta.url));

function newest(dir: string): number {
  let t = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    t = Math.max(t, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return t;
}

function builtAt(): number {
  try {
    return statSync(join(CONSOLE_APP_DIR, 'index.html')).mtimeMs;
  } catch {
    return -1;
  }
}

/** Build unless the build is newer than the sources; says whether it built. */
export async function buildConsole(o: { force?: boolean } = {}): Promise<boolean> {
  if (o.force !== true && builtAt() > newest(CONSOLE_SOURCE_DIR)) return false;
  // Loaded here: the exchange itself never needs Vite.
  const { build } = await import('vite');
  await build({
    configFile: false,
    root: CONSOLE_SOURCE_DIR,
    base: '/console/',
    logLevel: 'warn',
    esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
    build: {
      outDir: CONSOLE_APP_DIR,
      emptyOutDir: true,
      target: 'es2022',
      sourcemap: true,
      reportCompressedSize: false,
    },
  });
  return true;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = Date.now();
  const built = await buildConsole({ force: process.argv.includes('--force') });
  console.log(
    built
      ? `console built into ${CONSOLE_APP_DIR} in ${Date.now() - started} ms`
      : 'console build is up to date',
  );
}
