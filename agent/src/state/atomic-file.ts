// Files the agent keeps across restarts are replaced whole (write aside,
// fsync, rename), so a crash leaves the old or the new content, never half.

import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

export async function writeFileAtomic(path: string, data: string, mode = 0o600): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, data, { mode, flush: true });
  await rename(tmp, path);
}

/** The parsed file, or undefined when it does not exist. Unreadable JSON throws. */
export async function readJsonFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return JSON.parse(text) as unknown;
}

/** A file the agent keeps whose content is not what it should hold (cut short, or edited). */
export class UnreadableRecordError extends Error {
  override readonly name = 'UnreadableRecordError';
}
