// Files that hold one job (issue 20): no hand-written source file is over
// 450 lines, outside tests, generated code (gen/), test helpers (testing/),
// benchmarks (bench/) and the matching engine's order book, which is one
// data structure on purpose (docs/matching.md).

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MAX_LINES = 450;
const EXEMPT = [
  /\.test\.ts$/,
  /\/gen\//,
  /\/testing\//,
  /(^|\/)bench\//,
  /^exchange\/src\/matching\/order-book\.ts$/,
];

describe('source files', () => {
  it(`are at most ${MAX_LINES} lines each`, () => {
    const files = execFileSync('git', ['ls-files', '*.ts'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f !== '' && !EXEMPT.some((e) => e.test(f)));
    expect(files.length).toBeGreaterThan(100);
    const long = files
      .map((f) => ({ f, lines: readFileSync(join(ROOT, f), 'utf8').split('\n').length - 1 }))
      .filter((x) => x.lines > MAX_LINES)
      .map((x) => `${x.f}: ${x.lines} lines`);
    expect(long).toEqual([]);
  });
});
