import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { DataDirInUse, LOCK_FILE, lockDataDir } from './data-dir-lock.js';

const dirs: string[] = [];
const children: ChildProcess[] = [];

function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gpux-lock-'));
  dirs.push(d);
  return d;
}

/** A live process other than this one, to hold a lock. */
function sleeper(): ChildProcess & { pid: number } {
  const c = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
  children.push(c);
  return c as ChildProcess & { pid: number };
}

afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the embedded database directory lock (D34)', () => {
  it('is a file holding the pid, removed by the release', () => {
    const d = dir();
    const release = lockDataDir(d);
    expect(readFileSync(join(d, LOCK_FILE), 'utf8').trim()).toBe(String(process.pid));
    release();
    expect(existsSync(join(d, LOCK_FILE))).toBe(false);
  });

  it('stops a second process while the first one lives, naming it', () => {
    const d = dir();
    const other = sleeper();
    writeFileSync(join(d, LOCK_FILE), `${other.pid}\n`);
    expect(() => lockDataDir(d)).toThrow(DataDirInUse);
    expect(() => lockDataDir(d)).toThrow(new RegExp(`in use by process ${other.pid}`));
    // The live process's lock is left as it was.
    expect(readFileSync(join(d, LOCK_FILE), 'utf8').trim()).toBe(String(other.pid));
  });

  it('takes over the lock of a process that is gone (kill -9), and one half-written', async () => {
    const d = dir();
    const other = sleeper();
    writeFileSync(join(d, LOCK_FILE), `${other.pid}\n`);
    other.kill('SIGKILL');
    await once(other, 'exit');
    const release = lockDataDir(d);
    expect(readFileSync(join(d, LOCK_FILE), 'utf8').trim()).toBe(String(process.pid));
    release();
    writeFileSync(join(d, LOCK_FILE), '');
    lockDataDir(d)();
  });

  it('does not remove a lock that is no longer its own', () => {
    const d = dir();
    const release = lockDataDir(d);
    const other = sleeper();
    writeFileSync(join(d, LOCK_FILE), `${other.pid}\n`);
    release();
    expect(readFileSync(join(d, LOCK_FILE), 'utf8').trim()).toBe(String(other.pid));
  });
});
