import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import type { Logger } from '../logger.js';
import { ReportMarks } from './report-marks.js';
import { Tombstones } from './tombstones.js';

const A = 'lse_01jdq3m5x0aaaaaaaaaaaaaaaa';
const B = 'lse_01jdq3m5x0bbbbbbbbbbbbbbbb';
const C = 'lse_01jdq3m5x0cccccccccccccccc';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function recording(): { logger: Logger; errors: { leaseId: unknown; msg: string }[] } {
  const errors: { leaseId: unknown; msg: string }[] = [];
  const nothing = () => undefined;
  return {
    errors,
    logger: {
      error: (o: object | string, msg?: string) =>
        void errors.push({ leaseId: (o as { leaseId?: unknown }).leaseId, msg: msg ?? '' }),
      warn: nothing,
      info: nothing,
      debug: nothing,
    },
  };
}

describe('tombstones (D30: a revoked lease is never provisioned again)', () => {
  it('remembers a revoked lease across a restart until its end', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'gpux-tomb-'));
    dirs.push(stateDir);
    const t = new Tombstones(stateDir, recording().logger);
    await t.load();
    await t.add(A, 1_000, 'terminated');
    const again = new Tombstones(stateDir, recording().logger);
    await again.load();
    expect(again.get(A)).toEqual({ untilMs: 1_000, reason: 'terminated', reported: false });
    expect(await again.prune(1_001)).toBe(1);
    expect(again.has(A)).toBe(false);
  });

  it('a tombstone that cannot be read is kept, reported, and its lease counts as revoked', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'gpux-tomb-'));
    dirs.push(stateDir);
    const revoked = join(stateDir, 'revoked');
    mkdirSync(revoked, { recursive: true });
    // Cut short, not a tombstone, and not a file at all.
    writeFileSync(join(revoked, `${A}.json`), '{"untilMs":');
    writeFileSync(join(revoked, `${B}.json`), '{"reason":7}');
    mkdirSync(join(revoked, `${C}.json`));
    const { logger, errors } = recording();
    const t = new Tombstones(stateDir, logger);
    await t.load();
    expect([A, B, C].map((id) => t.has(id))).toEqual([true, true, true]);
    expect(errors.map((e) => e.leaseId).sort()).toEqual([A, B, C]);
    expect(errors[0]?.msg).toMatch(/^unreadable tombstone kept: its lease counts as revoked/);
    // Never deleted, not even once every lease would have ended.
    expect(await t.prune(Number.MAX_SAFE_INTEGER)).toBe(0);
    expect(readFileSync(join(revoked, `${A}.json`), 'utf8')).toBe('{"untilMs":');
    expect(existsSync(join(revoked, `${C}.json`))).toBe(true);
    // A revocation of it again writes a whole one in its place; still revoked.
    await t.add(A, 5_000, 'terminated');
    expect(t.get(A)).toEqual({ untilMs: 5_000, reason: 'terminated', reported: false });
    expect(t.has(A)).toBe(true);
  });

  it('a report mark that cannot be read is kept and reported; its lease is reported again', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'gpux-tomb-'));
    dirs.push(stateDir);
    mkdirSync(join(stateDir, 'reported'), { recursive: true });
    writeFileSync(join(stateDir, 'reported', `${A}.json`), 'garbage');
    const { logger, errors } = recording();
    const marks = new ReportMarks(stateDir, logger);
    await marks.load();
    expect(marks.get(A)).toBeUndefined();
    expect(errors).toEqual([
      {
        leaseId: A,
        msg: "unreadable report mark kept: its lease's access is reported again; repair or remove the file",
      },
    ]);
    expect(existsSync(join(stateDir, 'reported', `${A}.json`))).toBe(true);
    await marks.set(A, 42);
    expect(marks.get(A)).toEqual({ atMs: 42 });
  });
});
