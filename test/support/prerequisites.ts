// Programs some tests need that a fresh machine of the project's kind lacks
// (README, first lines). prerequisites.json lists them, each with the Debian
// package that brings it; .ci/run installs exactly those packages. A test
// that needs one calls requireProgram(ctx, …) first: without the program it
// is skipped with one line naming the program and the package (vitest prints
// the note beside the skipped test), so `npm ci && npm test` passes on a
// fresh clone; under CI (CI=true) it fails instead, so CI can never pass by
// skipping.

import { accessSync, constants, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export interface Prerequisite {
  /** An absolute path, or a name looked up on PATH. */
  readonly program: string;
  /** The Debian package that installs it. */
  readonly package: string;
  /** What needs it, for people. */
  readonly for: string;
}

export const PREREQUISITES: readonly Prerequisite[] = JSON.parse(
  readFileSync(new URL('./prerequisites.json', import.meta.url), 'utf8'),
) as Prerequisite[];

function listed(pkg: string): Prerequisite {
  const p = PREREQUISITES.find((q) => q.package === pkg);
  if (p === undefined) throw new Error(`test/support/prerequisites.json lists no ${pkg}`);
  return p;
}

export const SFTP_SERVER = listed('openssh-sftp-server');
export const SYSTEMD_ANALYZE = listed('systemd');
/** Both come with Debian's prometheus package. */
export const PROMTOOL = listedProgram('promtool');
export const PROMETHEUS = listedProgram('/usr/bin/prometheus');
export const CHROMIUM = listed('chromium');

function listedProgram(program: string): Prerequisite {
  const p = PREREQUISITES.find((q) => q.program === program);
  if (p === undefined) throw new Error(`test/support/prerequisites.json lists no ${program}`);
  return p;
}

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Whether `program` is there: its path if absolute, else on PATH. */
export function hasProgram(program: string, path = process.env['PATH'] ?? ''): boolean {
  if (program.includes('/')) return executable(program);
  return path
    .split(delimiter)
    .filter((d) => d !== '')
    .some((d) => executable(join(d, program)));
}

/** CI sets CI=true (so does .ci/run); an empty, `0` or `false` value is no CI. */
export function underCi(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = (env['CI'] ?? '').trim().toLowerCase();
  return v !== '' && v !== '0' && v !== 'false';
}

/** The one line a missing prerequisite prints. */
export function missingLine(p: Prerequisite): string {
  return `needs ${p.program} — apt-get install ${p.package}`;
}

export type Verdict =
  | { readonly run: true }
  | { readonly run: false; readonly skip: string }
  | { readonly run: false; readonly fail: string };

export function verdict(p: Prerequisite, present: boolean, ci: boolean): Verdict {
  if (present) return { run: true };
  if (!ci) return { run: false, skip: `skipped: ${missingLine(p)}` };
  return {
    run: false,
    fail: `${missingLine(p)} (CI=true: a missing prerequisite fails rather than skips; .ci/run installs it)`,
  };
}

/** What requireProgram needs of vitest's test context. */
export interface SkipContext {
  skip(note?: string): never;
}

/**
 * At the start of a test: returns when every program is there; otherwise
 * skips the test with the first missing one's line, or throws under CI.
 */
export function requireProgram(ctx: SkipContext, ...needs: Prerequisite[]): void {
  for (const p of needs) {
    const v = verdict(p, hasProgram(p.program), underCi());
    if (v.run) continue;
    if ('fail' in v) throw new Error(v.fail);
    ctx.skip(v.skip);
  }
}
