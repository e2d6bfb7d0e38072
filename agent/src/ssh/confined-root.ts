// SFTP paths confined to one directory. The client sees the directory as
// `/` (relative paths start there too, `..` stops there). Every path is
// resolved with realpath(3) and must stay inside, so a symlink pointing out
// of the workspace is refused rather than followed. Operations that act on
// a name itself (lstat, remove, rename, mkdir, create) resolve only the
// parent and open the last component with O_NOFOLLOW.
//
// The shells of the same lease run unconfined as the same user, so this is
// not a sandbox against the lease holder; it keeps SFTP to the workspace as
// the interface promises. A symlink swapped in between the check and the
// use of a parent directory is not caught.

import { realpath } from 'node:fs/promises';
import { posix, sep } from 'node:path';

export class OutsideRootError extends Error {
  override readonly name = 'OutsideRootError';
  readonly code = 'EOUTSIDE';
}

export interface ResolvedName {
  /** The real directory the name is in. */
  readonly dir: string;
  /** The last component; '' for the root itself. */
  readonly name: string;
  /** dir + name. */
  readonly path: string;
}

export class ConfinedRoot {
  private constructor(readonly real: string) {}

  static async open(dir: string): Promise<ConfinedRoot> {
    return new ConfinedRoot(await realpath(dir));
  }

  /** The client's view of a path: absolute, normalised, never above `/`. */
  static normalize(clientPath: string): string {
    return posix.resolve('/', clientPath);
  }

  /** The client's view of a real path inside the root. */
  toClient(real: string): string {
    if (real === this.real) return '/';
    return `/${real
      .slice(this.real.length + 1)
      .split(sep)
      .join('/')}`;
  }

  contains(real: string): boolean {
    return real === this.real || real.startsWith(this.real + sep);
  }

  /** An existing path, symlinks followed; ENOENT if missing, OutsideRootError if it leads out. */
  async resolve(clientPath: string): Promise<string> {
    const real = await realpath(this.join(ConfinedRoot.normalize(clientPath)));
    return this.check(real);
  }

  /** A name whose parent exists (inside); the name itself is not followed. */
  async resolveName(clientPath: string): Promise<ResolvedName> {
    const normal = ConfinedRoot.normalize(clientPath);
    if (normal === '/') return { dir: this.real, name: '', path: this.real };
    const dir = await this.resolve(posix.dirname(normal));
    const name = posix.basename(normal);
    return { dir, name, path: dir + sep + name };
  }

  /** `resolve` when the path exists, else the parent resolved plus the name. */
  async resolveForCreate(clientPath: string): Promise<string> {
    try {
      return await this.resolve(clientPath);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      return (await this.resolveName(clientPath)).path;
    }
  }

  private join(normal: string): string {
    return normal === '/' ? this.real : this.real + normal.split('/').join(sep);
  }

  private check(real: string): string {
    if (!this.contains(real)) throw new OutsideRootError('path leads outside the workspace');
    return real;
  }
}
