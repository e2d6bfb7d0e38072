// The embedded database's directory belongs to one process at a time
// (D34; docs/ownership.md "The embedded database"). PGlite is PostgreSQL
// inside this process: two processes that open the same directory each
// hold a private copy of it in memory and write the same files, so both
// would own "the" market and the files could be ruined. The ownership
// lease cannot see that (each process reads its own copy), so the
// directory is locked before PGlite opens it: a file holding the pid of
// the process that has it, made with O_EXCL. A lock whose process is gone
// (kill -9, a crash) is taken over; a live one stops the start. It is
// released at close and at exit.

import {
  closeSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';

/** The lock's file, beside the database's directory's contents. */
export const LOCK_FILE = 'gpux-exchange.lock';

export class DataDirInUse extends Error {
  constructor(
    readonly dir: string,
    readonly pid: number,
  ) {
    super(
      `the embedded database in ${dir} is in use by process ${pid}: one exchange process at a time may open it (a standby needs PostgreSQL, DATABASE_URL)`,
    );
    this.name = 'DataDirInUse';
  }
}

/** Whether a process of that pid runs (ours counts as gone: a lock of ours is stale). */
function alive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function holder(file: string): number | undefined {
  try {
    return Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
  } catch {
    return undefined;
  }
}

/**
 * Locks `dir` (which must exist) for this process; throws DataDirInUse when
 * a live process has it. Returns the release, which removes the lock if it
 * is still this process's (also done when the process exits).
 */
export function lockDataDir(dir: string): () => void {
  const file = join(dir, LOCK_FILE);
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 5) throw err;
      const pid = holder(file);
      if (pid !== undefined && alive(pid)) throw new DataDirInUse(dir, pid);
      takeStale(dir);
    }
  }
  const release = (): void => {
    process.off('exit', release);
    if (holder(file) === process.pid) rmSync(file, { force: true });
  };
  process.on('exit', release);
  return release;
}

/**
 * Moves a stale lock out of the way, atomically: of two processes that
 * found it stale only one can rename it. One that renamed a lock made
 * meanwhile by a live process puts it back (link: never over another) and
 * stops the start.
 */
function takeStale(dir: string): void {
  const file = join(dir, LOCK_FILE);
  const moved = `${file}.${process.pid}`;
  try {
    renameSync(file, moved);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const pid = holder(moved);
  if (pid !== undefined && alive(pid)) {
    try {
      linkSync(moved, file);
    } catch {
      // Another lock is there already: the start stops anyway.
    }
    rmSync(moved, { force: true });
    throw new DataDirInUse(dir, pid);
  }
  rmSync(moved, { force: true });
}
