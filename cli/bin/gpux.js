#!/usr/bin/env node
// The `gpux` command's file on PATH (npm links it at install, before any
// build): it runs the compiled command, and says how to build it when the
// build is missing. Plain JavaScript, not generated.
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/gpux.js', import.meta.url);
if (!existsSync(compiled)) {
  process.stderr.write('gpux: not built yet; run `npm run build` (or `npm start`) first\n');
  process.exit(1);
}
await import(compiled.href);
