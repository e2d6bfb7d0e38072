import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { EXCHANGE_NODE_FLAGS } from './node-flags.js';

describe('EXCHANGE_NODE_FLAGS', () => {
  it('are the flags `npm start` runs the exchange with', () => {
    const pkg = JSON.parse(
      readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as { scripts: Record<string, string> };
    expect(pkg.scripts['start']).toContain(
      `node ${EXCHANGE_NODE_FLAGS.join(' ')} exchange/dist/main.js`,
    );
  });
});

// Promotes ~200,000 objects at a time into the old generation, where they
// die, for ~4M objects in all; prints how many full (mark-compact)
// collections ran.
const PROMOTE_AND_COUNT_MAJOR_GCS = `
const { PerformanceObserver, constants } = require('node:perf_hooks');
let major = 0;
const obs = new PerformanceObserver((l) => {
  for (const e of l.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++;
});
obs.observe({ entryTypes: ['gc'] });
const ring = new Array(200000).fill(null);
for (let i = 0; i < 4000000; i++) ring[i % ring.length] = { a: i, b: [i, i + 1], c: 'x' + i };
setTimeout(() => {
  obs.disconnect();
  console.log(major + ' ' + require('node:v8').getHeapStatistics().heap_size_limit);
}, 50);
`;

function majorGcs(flags: readonly string[]): number {
  const r = spawnSync(process.execPath, [...flags, '-e', PROMOTE_AND_COUNT_MAJOR_GCS], {
    encoding: 'utf8',
    // Only the flags under test: no NODE_OPTIONS inherited from the runner.
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  // A flag this node does not know: "node: bad option", exit 9.
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  const [major, limit] = r.stdout.trim().split(' ').map(Number);
  // V8 caps --initial-old-space-size at half its heap limit, which it sizes
  // from the machine's memory: under ~4 GiB the check below cannot hold.
  expect(limit, 'V8 heap limit (bytes) on this machine').toBeGreaterThan(2 * 1024 ** 3);
  return major ?? NaN;
}

describe('EXCHANGE_NODE_FLAGS on this node', () => {
  it('are accepted, and the first full collection waits for a large old generation', () => {
    // The peer without --initial-old-space-size shows the workload does
    // trigger full collections, so the check below can fail.
    const without = EXCHANGE_NODE_FLAGS.filter((f) => !f.startsWith('--initial-old-space-size'));
    expect(majorGcs(without)).toBeGreaterThan(0);
    expect(majorGcs(EXCHANGE_NODE_FLAGS)).toBe(0);
  }, 30_000);
});
