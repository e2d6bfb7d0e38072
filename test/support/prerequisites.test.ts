// The helper for tests that need a program a fresh machine lacks: skipped
// with one line naming the program and its package, failed under CI.

import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, describe, expect, it } from 'vitest';

import {
  PREREQUISITES,
  SFTP_SERVER,
  hasProgram,
  requireProgram,
  underCi,
  verdict,
} from './prerequisites.js';
import type { Prerequisite } from './prerequisites.js';

const dir = mkdtempSync(join(tmpdir(), 'gpux-prereq-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ABSENT: Prerequisite = {
  program: join(dir, 'no-such-program'),
  package: 'no-such-package',
  for: 'this test',
};

describe('prerequisites of tests (test/support/prerequisites.json)', () => {
  it('present: the test runs', () => {
    expect(verdict(SFTP_SERVER, true, false)).toEqual({ run: true });
    expect(verdict(SFTP_SERVER, true, true)).toEqual({ run: true });
  });

  it('absent: one line naming the program and the Debian package, a failure under CI', () => {
    expect(verdict(SFTP_SERVER, false, false)).toEqual({
      run: false,
      skip: 'skipped: needs /usr/lib/openssh/sftp-server — apt-get install openssh-sftp-server',
    });
    const ci = verdict(SFTP_SERVER, false, true);
    expect(ci).toMatchObject({ run: false });
    expect('fail' in ci && ci.fail).toMatch(
      /^needs \/usr\/lib\/openssh\/sftp-server — apt-get install openssh-sftp-server \(CI=true/,
    );
    expect('fail' in ci && ci.fail).not.toContain('\n');
  });

  it('CI is any CI value but empty, 0 or false', () => {
    expect(underCi({ CI: 'true' })).toBe(true);
    expect(underCi({ CI: '1' })).toBe(true);
    for (const v of [undefined, '', '0', 'false', 'FALSE']) expect(underCi({ CI: v })).toBe(false);
  });

  it('finds a program by its path, or by name on PATH, only if executable', () => {
    const tool = join(dir, 'tool');
    writeFileSync(tool, '#!/bin/sh\n');
    chmodSync(tool, 0o644);
    expect(hasProgram(tool)).toBe(false);
    expect(hasProgram('tool', dir)).toBe(false);
    chmodSync(tool, 0o755);
    expect(hasProgram(tool)).toBe(true);
    expect(hasProgram('tool', `/nonexistent:${dir}`)).toBe(true);
    expect(hasProgram('tool', '/nonexistent')).toBe(false);
  });

  it("skips through vitest's own skip without the program, or fails under CI", (ctx) => {
    const notes: (string | undefined)[] = [];
    const fake = {
      skip(note?: string): never {
        notes.push(note);
        throw new Error('skipped');
      },
    };
    const before = process.env['CI'];
    try {
      process.env['CI'] = 'false';
      expect(() => requireProgram(fake, ABSENT)).toThrow('skipped');
      expect(notes).toEqual([`skipped: needs ${ABSENT.program} — apt-get install no-such-package`]);
      process.env['CI'] = 'true';
      expect(() => requireProgram(fake, ABSENT)).toThrow(/^needs .* \(CI=true/);
      expect(notes).toHaveLength(1);
    } finally {
      if (before === undefined) delete process.env['CI'];
      else process.env['CI'] = before;
    }
    // A program that is there: the test goes on (vitest's own context here).
    requireProgram(ctx, { program: process.execPath, package: 'nodejs', for: 'this test' });
  });

  it('.ci/run installs every package listed, from the list itself', () => {
    expect(PREREQUISITES.length).toBeGreaterThan(0);
    for (const p of PREREQUISITES) expect(p.package).toMatch(/^[a-z0-9][a-z0-9+.-]+$/);
    const run = readFileSync(fileURLToPath(new URL('../../.ci/run', import.meta.url)), 'utf8');
    expect(run).toContain('test/support/prerequisites.json');
    expect(run).toMatch(/^export CI=true$/m);
  });
});
