// What node-flags.ts promises, checked without starting node: the flags are
// the ones `npm start` passes and the README documents. Whether they still postpone V8's full
// collections on this node is measured by `npm run bench -- gc`
// (docs/benchmarks.md), not here: it takes child processes and seconds.

import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { EXCHANGE_NODE_FLAGS } from './node-flags.js';

describe('EXCHANGE_NODE_FLAGS', () => {
  it('are the flags `npm start` runs the exchange with', () => {
    const pkg = JSON.parse(
      readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as { scripts: Record<string, string> };
    // npm start runs the whole market, the exchange in the same process (gpux start).
    expect(pkg.scripts['start']).toContain(
      `node ${EXCHANGE_NODE_FLAGS.join(' ')} cli/bin/gpux.js start`,
    );
  });

  it('are what the README tells operators to run the exchange with, each once', () => {
    expect(new Set(EXCHANGE_NODE_FLAGS).size).toBe(EXCHANGE_NODE_FLAGS.length);
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    expect(readme.replace(/\s+/g, ' ')).toContain(
      `node ${EXCHANGE_NODE_FLAGS.join(' ')} exchange/dist/main.js`,
    );
  });

  it('cannot go in NODE_OPTIONS on this node, so they are passed on the command line', () => {
    for (const flag of EXCHANGE_NODE_FLAGS) {
      expect(process.allowedNodeEnvironmentFlags.has(flag.split('=')[0] ?? flag)).toBe(false);
    }
  });
});
