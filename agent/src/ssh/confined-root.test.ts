import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfinedRoot, OutsideRootError } from './confined-root.js';

let base: string;
let ws: string;
let outside: string;
let root: ConfinedRoot;

beforeEach(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'gpux-confined-')));
  ws = join(base, 'ws');
  outside = join(base, 'outside');
  mkdirSync(join(ws, 'data'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(ws, 'data', 'file.txt'), 'in');
  writeFileSync(join(outside, 'secret'), 'out');
  symlinkSync('data/file.txt', join(ws, 'inside-link'));
  symlinkSync(join(outside, 'secret'), join(ws, 'out-link'));
  symlinkSync(outside, join(ws, 'out-dir'));
  symlinkSync(join(outside, 'not-yet'), join(ws, 'dangling-out'));
  root = await ConfinedRoot.open(ws);
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

describe('SFTP paths confined to the workspace', () => {
  it('shows the workspace as / and stops .. there', async () => {
    expect(ConfinedRoot.normalize('.')).toBe('/');
    expect(ConfinedRoot.normalize('data/../data/./file.txt')).toBe('/data/file.txt');
    expect(ConfinedRoot.normalize('/../../etc/passwd')).toBe('/etc/passwd');
    expect(await root.resolve('.')).toBe(ws);
    expect(await root.resolve('../../..')).toBe(ws);
    expect(root.toClient(await root.resolve('data/file.txt'))).toBe('/data/file.txt');
  });

  it('maps /etc/passwd to the workspace, not to the host', async () => {
    await expect(root.resolve('/etc/passwd')).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(root.resolve('../../../../etc/passwd')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('follows symlinks that stay inside', async () => {
    expect(await root.resolve('inside-link')).toBe(join(ws, 'data', 'file.txt'));
  });

  it('refuses symlinks that lead outside, for files and directories', async () => {
    await expect(root.resolve('out-link')).rejects.toThrow(OutsideRootError);
    await expect(root.resolve('out-dir/secret')).rejects.toThrow(OutsideRootError);
    await expect(root.resolveName('out-dir/new-file')).rejects.toThrow(OutsideRootError);
    await expect(root.resolveForCreate('out-dir/new-file')).rejects.toThrow(OutsideRootError);
  });

  it('names a link itself without following it (lstat, remove, rename)', async () => {
    expect(await root.resolveName('out-link')).toEqual({
      dir: ws,
      name: 'out-link',
      path: join(ws, 'out-link'),
    });
    expect(await root.resolveName('/')).toEqual({ dir: ws, name: '', path: ws });
  });

  it('resolves a new name under an existing directory for creation', async () => {
    expect(await root.resolveForCreate('data/new.bin')).toBe(join(ws, 'data', 'new.bin'));
    await expect(root.resolveForCreate('missing/new.bin')).rejects.toMatchObject({
      code: 'ENOENT',
    });
    // A dangling link is returned as itself: the open uses O_NOFOLLOW, so
    // nothing is created at its target outside.
    expect(await root.resolveForCreate('dangling-out')).toBe(join(ws, 'dangling-out'));
  });
});
