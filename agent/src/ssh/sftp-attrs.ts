// Pure translations between SFTP v3 (what OpenSSH's sftp and scp speak) and
// Node's file system: open flags, file attributes, `ls -l` long names and
// error codes to SFTP status codes.

import { constants } from 'node:fs';
import type { Stats } from 'node:fs';
// ssh2 is CommonJS without named exports Node can detect: import the object.
import ssh2 from 'ssh2';
import type { Attributes } from 'ssh2';

const { OPEN_MODE, STATUS_CODE } = ssh2.utils.sftp;

/** open(2) flags for SFTP pflags; O_NOFOLLOW always (see confined-root.ts). Undefined: invalid. */
export function openFlags(pflags: number): number | undefined {
  const read = (pflags & OPEN_MODE.READ) !== 0;
  const write = (pflags & OPEN_MODE.WRITE) !== 0;
  if (!read && !write) return undefined;
  let flags = read && write ? constants.O_RDWR : write ? constants.O_WRONLY : constants.O_RDONLY;
  if (pflags & OPEN_MODE.APPEND) flags |= constants.O_APPEND;
  if (pflags & OPEN_MODE.CREAT) flags |= constants.O_CREAT;
  if (pflags & OPEN_MODE.TRUNC) flags |= constants.O_TRUNC;
  if (pflags & OPEN_MODE.EXCL) flags |= constants.O_EXCL;
  return flags | constants.O_NOFOLLOW;
}

export function attrsOf(st: Stats): Attributes {
  return {
    mode: st.mode,
    uid: st.uid,
    gid: st.gid,
    size: st.size,
    atime: Math.floor(st.atimeMs / 1000),
    mtime: Math.floor(st.mtimeMs / 1000),
  };
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const HALF_YEAR_MS = 182 * 24 * 3600 * 1000;

function typeChar(mode: number): string {
  switch (mode & constants.S_IFMT) {
    case constants.S_IFDIR:
      return 'd';
    case constants.S_IFLNK:
      return 'l';
    case constants.S_IFCHR:
      return 'c';
    case constants.S_IFBLK:
      return 'b';
    case constants.S_IFIFO:
      return 'p';
    case constants.S_IFSOCK:
      return 's';
    default:
      return '-';
  }
}

export function modeString(mode: number): string {
  const bit = (mask: number, c: string): string => (mode & mask ? c : '-');
  const exec = (x: number, special: number, on: string, off: string): string =>
    mode & special ? (mode & x ? on : off) : bit(x, 'x');
  return (
    typeChar(mode) +
    bit(0o400, 'r') +
    bit(0o200, 'w') +
    exec(0o100, 0o4000, 's', 'S') +
    bit(0o040, 'r') +
    bit(0o020, 'w') +
    exec(0o010, 0o2000, 's', 'S') +
    bit(0o004, 'r') +
    bit(0o002, 'w') +
    exec(0o001, 0o1000, 't', 'T')
  );
}

/** The `ls -l` line OpenSSH's sftp-server sends (UTC; numeric owner and group). */
export function longname(name: string, st: Stats, nowMs: number): string {
  const t = new Date(st.mtimeMs);
  const day = String(t.getUTCDate()).padStart(2, ' ');
  const recent = Math.abs(nowMs - st.mtimeMs) < HALF_YEAR_MS;
  const when = recent
    ? `${String(t.getUTCHours()).padStart(2, '0')}:${String(t.getUTCMinutes()).padStart(2, '0')}`
    : ` ${t.getUTCFullYear()}`;
  return [
    modeString(st.mode),
    String(st.nlink).padStart(3, ' '),
    String(st.uid).padEnd(8, ' '),
    String(st.gid).padEnd(8, ' '),
    String(st.size).padStart(8, ' '),
    `${MONTHS[t.getUTCMonth()] ?? '???'} ${day} ${when}`,
    name,
  ].join(' ');
}

export interface SftpStatus {
  readonly code: number;
  readonly message: string;
}

/** An error from the file system (or the confinement) as an SFTP status. */
export function statusOf(err: unknown): SftpStatus {
  const code = (err as { code?: unknown } | null)?.code;
  switch (code) {
    case 'ENOENT':
    case 'ENOTDIR':
      return { code: STATUS_CODE.NO_SUCH_FILE, message: 'No such file' };
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return { code: STATUS_CODE.PERMISSION_DENIED, message: 'Permission denied' };
    case 'EOUTSIDE':
      return { code: STATUS_CODE.PERMISSION_DENIED, message: 'Path leads outside the workspace' };
    case 'ELOOP':
      return { code: STATUS_CODE.PERMISSION_DENIED, message: 'Refusing to follow a symlink' };
    case 'EEXIST':
      return { code: STATUS_CODE.FAILURE, message: 'File exists' };
    case 'ENOTEMPTY':
      return { code: STATUS_CODE.FAILURE, message: 'Directory not empty' };
    case 'EISDIR':
      return { code: STATUS_CODE.FAILURE, message: 'Is a directory' };
    case 'ENOSPC':
    case 'EDQUOT':
      return { code: STATUS_CODE.FAILURE, message: 'No space left on device' };
    default:
      return { code: STATUS_CODE.FAILURE, message: 'Failure' };
  }
}
