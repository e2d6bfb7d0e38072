import { constants } from 'node:fs';
import type { Stats } from 'node:fs';
import ssh2 from 'ssh2';
import { describe, expect, it } from 'vitest';
import { attrsOf, longname, modeString, openFlags, statusOf } from './sftp-attrs.js';

const { OPEN_MODE, STATUS_CODE } = ssh2.utils.sftp;

function stats(over: Partial<Stats>): Stats {
  return {
    mode: constants.S_IFREG | 0o644,
    nlink: 1,
    uid: 1000,
    gid: 1000,
    size: 1234,
    atimeMs: 1_700_000_000_500,
    mtimeMs: Date.UTC(2026, 10, 23, 9, 5),
    ...over,
  } as Stats;
}

describe('SFTP open flags', () => {
  it('maps read, write, create, truncate, exclusive and append, always with O_NOFOLLOW', () => {
    expect(openFlags(OPEN_MODE.READ)).toBe(constants.O_RDONLY | constants.O_NOFOLLOW);
    expect(openFlags(OPEN_MODE.WRITE | OPEN_MODE.CREAT | OPEN_MODE.TRUNC)).toBe(
      constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
    );
    expect(openFlags(OPEN_MODE.READ | OPEN_MODE.WRITE | OPEN_MODE.EXCL | OPEN_MODE.CREAT)).toBe(
      constants.O_RDWR | constants.O_EXCL | constants.O_CREAT | constants.O_NOFOLLOW,
    );
    expect(openFlags(OPEN_MODE.WRITE | OPEN_MODE.APPEND)).toBe(
      constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW,
    );
  });

  it('refuses flags that neither read nor write', () => {
    expect(openFlags(OPEN_MODE.CREAT)).toBeUndefined();
  });
});

describe('SFTP attributes and long names', () => {
  it('gives times in whole seconds', () => {
    expect(attrsOf(stats({}))).toEqual({
      mode: constants.S_IFREG | 0o644,
      uid: 1000,
      gid: 1000,
      size: 1234,
      atime: 1_700_000_000,
      mtime: Date.UTC(2026, 10, 23, 9, 5) / 1000,
    });
  });

  it('prints modes as ls -l does', () => {
    expect(modeString(constants.S_IFDIR | 0o755)).toBe('drwxr-xr-x');
    expect(modeString(constants.S_IFLNK | 0o777)).toBe('lrwxrwxrwx');
    expect(modeString(constants.S_IFREG | 0o4755)).toBe('-rwsr-xr-x');
    expect(modeString(constants.S_IFDIR | 0o1777)).toBe('drwxrwxrwt');
    expect(modeString(constants.S_IFREG | 0o2640)).toBe('-rw-r-S---');
  });

  it('long name: time of day for recent files, year for old ones', () => {
    const now = Date.UTC(2026, 10, 23, 12, 0);
    expect(longname('a.txt', stats({}), now)).toBe(
      '-rw-r--r--   1 1000     1000         1234 Nov 23 09:05 a.txt',
    );
    const old = stats({ mtimeMs: Date.UTC(2024, 0, 5) });
    expect(longname('old', old, now)).toBe(
      '-rw-r--r--   1 1000     1000         1234 Jan  5  2024 old',
    );
  });
});

describe('SFTP status of an error', () => {
  it('maps file system errors and the confinement', () => {
    expect(statusOf({ code: 'ENOENT' }).code).toBe(STATUS_CODE.NO_SUCH_FILE);
    expect(statusOf({ code: 'EACCES' }).code).toBe(STATUS_CODE.PERMISSION_DENIED);
    expect(statusOf({ code: 'EOUTSIDE' }).code).toBe(STATUS_CODE.PERMISSION_DENIED);
    expect(statusOf({ code: 'ELOOP' }).code).toBe(STATUS_CODE.PERMISSION_DENIED);
    expect(statusOf({ code: 'ENOTEMPTY' })).toEqual({
      code: STATUS_CODE.FAILURE,
      message: 'Directory not empty',
    });
    expect(statusOf(new Error('odd')).code).toBe(STATUS_CODE.FAILURE);
    expect(statusOf(null).code).toBe(STATUS_CODE.FAILURE);
  });
});
