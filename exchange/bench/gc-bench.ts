// npm run bench -- gc [--runs R]
//
// Do the exchange's node flags (EXCHANGE_NODE_FLAGS, src/node-flags.ts) still
// postpone V8's full collections on this node and this machine? Runs a small
// workload in child processes, with the flags and without
// --initial-old-space-size, and counts full (mark-compact) collections. The
// workload promotes ~200,000 objects at a time into the old generation,
// where they die, ~4M in all: what the exchange does with requests' and
// batches' objects under load, only faster. Without the flag V8 collects
// several times; with it, never, as long as V8's heap limit leaves it room
// (it caps the flag at half that limit, sized from the machine's memory).
//
// Exits 1 when the flags do not postpone full collections (or the workload
// shows none without them, so the check could not fail), 2 on bad arguments.
// docs/benchmarks.md, "The exchange's node flags".

import { spawn } from 'node:child_process';

import { EXCHANGE_NODE_FLAGS } from '../src/node-flags.js';

const USAGE = 'usage: npm run bench -- gc [--runs R]';

/** Prints "<full collections> <scavenges> <V8 heap limit in bytes> <ms>". */
const PROMOTE_AND_COUNT_GCS = `
const { PerformanceObserver, constants, performance } = require('node:perf_hooks');
let major = 0, minor = 0;
const obs = new PerformanceObserver((l) => {
  for (const e of l.getEntries()) {
    if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++;
    else if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MINOR) minor++;
  }
});
obs.observe({ entryTypes: ['gc'] });
const t0 = performance.now();
const ring = new Array(200000).fill(null);
for (let i = 0; i < 4000000; i++) ring[i % ring.length] = { a: i, b: [i, i + 1], c: 'x' + i };
const ms = performance.now() - t0;
setTimeout(() => {
  obs.disconnect();
  console.log([major, minor, require('node:v8').getHeapStatistics().heap_size_limit, Math.round(ms)].join(' '));
}, 50);
`;

interface GcCount {
  readonly major: number;
  readonly minor: number;
  readonly heapLimit: number;
  readonly ms: number;
}

function fail(message: string, code = 1): never {
  console.error(`bench gc FAILED: ${message}`);
  process.exit(code);
}

function countGcs(flags: readonly string[]): Promise<GcCount> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...flags, '-e', PROMOTE_AND_COUNT_GCS], {
      // Only the flags under test: nothing inherited from NODE_OPTIONS.
      env: { ...process.env, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      // A flag this node does not know: "node: bad option", exit 9.
      if (code !== 0 || err !== '') {
        reject(new Error(`node ${flags.join(' ')} exited ${code}: ${err.trim()}`));
        return;
      }
      const [major, minor, heapLimit, ms] = out.trim().split(' ').map(Number);
      resolve({
        major: major ?? NaN,
        minor: minor ?? NaN,
        heapLimit: heapLimit ?? NaN,
        ms: ms ?? NaN,
      });
    });
  });
}

function parseRuns(argv: readonly string[]): number {
  let runs = 3;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === 'gc') continue;
    if (a === '--runs') {
      runs = Number(argv[++i]);
      if (!Number.isSafeInteger(runs) || runs < 1)
        fail(`--runs: expected a whole number ≥ 1\n${USAGE}`, 2);
    } else if (a === '-h' || a === '--help') {
      console.log(USAGE);
      process.exit(0);
    } else {
      fail(`unknown argument ${a}\n${USAGE}`, 2);
    }
  }
  return runs;
}

export async function runGcBench(argv: readonly string[]): Promise<void> {
  const runs = parseRuns(argv);
  const withFlags = EXCHANGE_NODE_FLAGS;
  const without = EXCHANGE_NODE_FLAGS.filter((f) => !f.startsWith('--initial-old-space-size'));
  console.log(
    `bench gc: node ${process.version}; workload: 4,000,000 objects promoted 200,000 at a time; ${runs} run(s) each, interleaved`,
  );
  const a: GcCount[] = [];
  const b: GcCount[] = [];
  try {
    for (let r = 0; r < runs; r++) {
      a.push(await countGcs(without));
      b.push(await countGcs(withFlags));
    }
  } catch (err) {
    fail((err as Error).message);
  }
  const show = (label: string, flags: readonly string[], counts: readonly GcCount[]): void => {
    console.log(`  ${label} (node ${flags.join(' ') || '(no flags)'})`);
    console.log(
      `    full collections ${counts.map((c) => c.major).join(', ')}; scavenges ${counts.map((c) => c.minor).join(', ')}; workload ${counts.map((c) => c.ms).join(', ')} ms`,
    );
  };
  show('without --initial-old-space-size', without, a);
  show('with the exchange flags', withFlags, b);
  const heapLimitMiB = Math.round((b[0]?.heapLimit ?? 0) / 1024 ** 2);
  console.log(`  V8 heap limit on this machine: ${heapLimitMiB} MiB`);

  const before = Math.min(...a.map((c) => c.major));
  const after = Math.max(...b.map((c) => c.major));
  if (before === 0) {
    fail('the workload ran no full collection even without the flag: this check cannot tell');
  }
  if (after > 0) {
    fail(
      `with the exchange's flags V8 still ran ${after} full collection(s) in a run` +
        (heapLimitMiB <= 2048
          ? ` (V8 caps --initial-old-space-size at half its heap limit, ${heapLimitMiB} MiB here: too little memory?)`
          : ''),
    );
  }
  console.log(
    `gc: the exchange's flags postpone full collections: met (${before}+ without, 0 with, in every run)`,
  );
}
