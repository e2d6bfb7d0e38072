// The SFTP subsystem (v3, what OpenSSH's sftp and scp speak) served from a
// ConfinedRoot: one instance per `sftp` channel. ssh2 parses the packets;
// this answers them from the file system, one after the other.

import { constants } from 'node:fs';
import type { Stats } from 'node:fs';
import {
  chmod,
  chown,
  lstat,
  mkdir,
  open,
  readdir,
  readlink,
  rename,
  rmdir,
  stat,
  truncate,
  unlink,
  utimes,
} from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
// ssh2 is CommonJS without named exports Node can detect: import the object.
import ssh2 from 'ssh2';
import type { Attributes, FileEntry, SFTPWrapper } from 'ssh2';
import type { ConfinedRoot } from './confined-root.js';
import { hasErrno } from './errno.js';
import type { Logger } from './logger.js';
import { attrsOf, longname, openFlags, statusOf } from './sftp-attrs.js';

const { STATUS_CODE } = ssh2.utils.sftp;

/** Largest READ answered at once; clients ask again for the rest. */
const MAX_READ_BYTES = 64 * 1024;
const READDIR_BATCH = 100;
const MAX_OPEN_HANDLES = 256;
const DEFAULT_FILE_MODE = 0o666;
const DEFAULT_DIR_MODE = 0o777;

type OpenHandle =
  | { readonly kind: 'file'; readonly file: FileHandle }
  | { readonly kind: 'dir'; readonly path: string; entries?: string[]; next: number };

/** A request's own failure, answered with this status. */
class SftpRefusal extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

// SETSTAT attributes arrive with only the fields the client set.
type SetAttrs = Partial<Attributes>;

export class SftpSession {
  private readonly handles = new Map<number, OpenHandle>();
  private nextHandle = 1;
  private closed = false;
  private queue: Promise<void> = Promise.resolve();
  // Set before any request runs (see run()).
  private root!: ConfinedRoot;

  /**
   * Listens at once: a client sends its INIT right behind the subsystem
   * request, and ssh2 drops data that arrives before a listener. Requests
   * wait for `root`; if it rejects, the owner closes the channel.
   */
  constructor(
    private readonly sftp: SFTPWrapper,
    private readonly rootReady: Promise<ConfinedRoot>,
    private readonly logger: Logger,
  ) {
    this.listen();
  }

  /** Resolves when every request received so far is answered. */
  drained(): Promise<void> {
    return this.queue;
  }

  /** Closes every open file; later requests are not answered. */
  async close(): Promise<void> {
    this.closed = true;
    const files = [...this.handles.values()].flatMap((h) => (h.kind === 'file' ? [h.file] : []));
    this.handles.clear();
    await Promise.all(
      files.map((f) =>
        f.close().catch((err: unknown) => this.logger.warn({ err }, 'sftp file not closed')),
      ),
    );
  }

  private listen(): void {
    const s = this.sftp;
    s.on('OPEN', (id, path, pflags, attrs) =>
      this.run(id, () => this.open(id, path, pflags, attrs)),
    );
    s.on('CLOSE', (id, handle) => this.run(id, () => this.closeHandle(id, handle)));
    s.on('READ', (id, handle, offset, len) =>
      this.run(id, () => this.read(id, handle, offset, len)),
    );
    s.on('WRITE', (id, handle, offset, data) =>
      this.run(id, () => this.write(id, handle, offset, data)),
    );
    s.on('FSTAT', (id, handle) =>
      this.run(id, async () => s.attrs(id, attrsOf(await this.file(handle).stat()))),
    );
    s.on('FSETSTAT', (id, handle, attrs) =>
      this.run(id, () => this.setAttrs(id, fileTarget(this.file(handle)), attrs)),
    );
    s.on('STAT', (id, path) =>
      this.run(id, async () => s.attrs(id, attrsOf(await stat(await this.root.resolve(path))))),
    );
    s.on('LSTAT', (id, path) =>
      this.run(id, async () =>
        s.attrs(id, attrsOf(await lstat((await this.root.resolveName(path)).path))),
      ),
    );
    s.on('SETSTAT', (id, path, attrs) =>
      this.run(id, async () => this.setAttrs(id, pathTarget(await this.root.resolve(path)), attrs)),
    );
    s.on('OPENDIR', (id, path) => this.run(id, () => this.openDir(id, path)));
    s.on('READDIR', (id, handle) => this.run(id, () => this.readDir(id, handle)));
    s.on('REMOVE', (id, path) =>
      this.run(id, async () => {
        await unlink(await this.nameNotRoot(path));
        this.ok(id);
      }),
    );
    s.on('MKDIR', (id, path, attrs) =>
      this.run(id, async () => {
        const mode = (attrs as SetAttrs).mode;
        await mkdir(
          await this.nameNotRoot(path),
          mode === undefined ? DEFAULT_DIR_MODE : mode & 0o7777,
        );
        this.ok(id);
      }),
    );
    s.on('RMDIR', (id, path) =>
      this.run(id, async () => {
        await rmdir(await this.nameNotRoot(path));
        this.ok(id);
      }),
    );
    s.on('RENAME', (id, from, to) => this.run(id, () => this.rename(id, from, to)));
    s.on('REALPATH', (id, path) =>
      this.run(id, async () => {
        const client = this.root.toClient(await this.root.resolveForCreate(path));
        s.name(id, [{ filename: client, longname: client, attrs: {} as Attributes }]);
      }),
    );
    s.on('READLINK', (id, path) => this.run(id, () => this.readLink(id, path)));
    s.on('SYMLINK', (id) =>
      this.run(id, () => {
        throw new SftpRefusal(STATUS_CODE.OP_UNSUPPORTED, 'Symlinks are not created over SFTP');
      }),
    );
  }

  /**
   * Runs one request after the ones before it; a thrown error becomes its
   * status answer. Strictly in order, as OpenSSH's sftp-server does: scp
   * truncates an upload at the first write acknowledged out of order.
   */
  private run(id: number, work: () => unknown): void {
    if (this.closed) return;
    this.queue = this.queue.then(async () => {
      if (this.closed) return;
      try {
        this.root = await this.rootReady;
        await work();
      } catch (err) {
        if (this.closed) return;
        if (err instanceof SftpRefusal) {
          this.sftp.status(id, err.code, err.message);
          return;
        }
        const status = statusOf(err);
        if (status.code === (STATUS_CODE.FAILURE as number)) {
          this.logger.debug({ err }, 'sftp request failed');
        }
        this.sftp.status(id, status.code, status.message);
      }
    });
  }

  private ok(id: number): void {
    if (!this.closed) this.sftp.status(id, STATUS_CODE.OK);
  }

  private async open(id: number, path: string, pflags: number, attrs: SetAttrs): Promise<void> {
    const flags = openFlags(pflags);
    if (flags === undefined) throw new SftpRefusal(STATUS_CODE.FAILURE, 'Bad open flags');
    this.roomForHandle();
    const creates = (flags & constants.O_CREAT) !== 0;
    const real = creates ? await this.root.resolveForCreate(path) : await this.root.resolve(path);
    const mode = attrs.mode === undefined ? DEFAULT_FILE_MODE : attrs.mode & 0o7777;
    const file = await open(real, flags, mode);
    if (this.closed) {
      await file.close();
      return;
    }
    this.sftp.handle(id, this.addHandle({ kind: 'file', file }));
  }

  private async read(id: number, handle: Buffer, offset: number, len: number): Promise<void> {
    const file = this.file(handle);
    const buf = Buffer.alloc(Math.min(len, MAX_READ_BYTES));
    const { bytesRead } = await file.read(buf, 0, buf.length, offset);
    if (this.closed) return;
    if (bytesRead === 0) this.sftp.status(id, STATUS_CODE.EOF);
    else this.sftp.data(id, buf.subarray(0, bytesRead));
  }

  private async write(id: number, handle: Buffer, offset: number, data: Buffer): Promise<void> {
    const file = this.file(handle);
    let done = 0;
    while (done < data.length) {
      const { bytesWritten } = await file.write(data, done, data.length - done, offset + done);
      done += bytesWritten;
    }
    this.ok(id);
  }

  private async closeHandle(id: number, handle: Buffer): Promise<void> {
    const key = handleKey(handle);
    const open = key === undefined ? undefined : this.handles.get(key);
    if (key === undefined || open === undefined) throw badHandle();
    this.handles.delete(key);
    if (open.kind === 'file') await open.file.close();
    this.ok(id);
  }

  private async openDir(id: number, path: string): Promise<void> {
    this.roomForHandle();
    const real = await this.root.resolve(path);
    if (!(await stat(real)).isDirectory()) {
      throw new SftpRefusal(STATUS_CODE.NO_SUCH_FILE, 'Not a directory');
    }
    if (this.closed) return;
    this.sftp.handle(id, this.addHandle({ kind: 'dir', path: real, next: 0 }));
  }

  private async readDir(id: number, handle: Buffer): Promise<void> {
    const key = handleKey(handle);
    const dir = key === undefined ? undefined : this.handles.get(key);
    if (dir?.kind !== 'dir') throw badHandle();
    dir.entries ??= await readdir(dir.path);
    const batch = dir.entries.slice(dir.next, dir.next + READDIR_BATCH);
    dir.next += batch.length;
    if (batch.length === 0) {
      if (!this.closed) this.sftp.status(id, STATUS_CODE.EOF);
      return;
    }
    const now = Date.now();
    const listed = await Promise.all(
      batch.map(async (filename): Promise<FileEntry | undefined> => {
        let st: Stats;
        try {
          st = await lstat(`${dir.path}/${filename}`);
        } catch (err) {
          if (hasErrno(err, 'ENOENT')) return undefined; // removed since readdir
          throw err;
        }
        return { filename, longname: longname(filename, st, now), attrs: attrsOf(st) };
      }),
    );
    if (!this.closed)
      this.sftp.name(
        id,
        listed.filter((e): e is FileEntry => e !== undefined),
      );
  }

  private async rename(id: number, from: string, to: string): Promise<void> {
    const source = await this.nameNotRoot(from);
    const target = await this.nameNotRoot(to);
    // SFTP v3 rename does not replace an existing target (OpenSSH's server
    // neither); clients that want replacing remove first.
    const exists = await lstat(target).then(
      () => true,
      () => false,
    );
    if (exists) throw new SftpRefusal(STATUS_CODE.FAILURE, 'File exists');
    await rename(source, target);
    this.ok(id);
  }

  private async readLink(id: number, path: string): Promise<void> {
    const link = await this.root.resolveName(path);
    await readlink(link.path); // EINVAL when it is not a symlink
    // The target as the client sees it; a target outside is refused by resolve.
    const client = this.root.toClient(await this.root.resolve(path));
    if (!this.closed) {
      this.sftp.name(id, [{ filename: client, longname: client, attrs: {} as Attributes }]);
    }
  }

  private async setAttrs(id: number, target: AttrTarget, attrs: SetAttrs): Promise<void> {
    if (attrs.size !== undefined) await target.truncate(attrs.size);
    if (attrs.uid !== undefined && attrs.gid !== undefined)
      await target.chown(attrs.uid, attrs.gid);
    if (attrs.mode !== undefined) await target.chmod(attrs.mode & 0o7777);
    if (attrs.atime !== undefined && attrs.mtime !== undefined) {
      await target.utimes(attrs.atime, attrs.mtime);
    }
    this.ok(id);
  }

  private async nameNotRoot(path: string): Promise<string> {
    const resolved = await this.root.resolveName(path);
    if (resolved.name === '') {
      throw new SftpRefusal(STATUS_CODE.PERMISSION_DENIED, 'The workspace root itself');
    }
    return resolved.path;
  }

  private file(handle: Buffer): FileHandle {
    const key = handleKey(handle);
    const open = key === undefined ? undefined : this.handles.get(key);
    if (open?.kind !== 'file') throw badHandle();
    return open.file;
  }

  private roomForHandle(): void {
    if (this.handles.size >= MAX_OPEN_HANDLES) {
      throw new SftpRefusal(STATUS_CODE.FAILURE, 'Too many open handles');
    }
  }

  private addHandle(open: OpenHandle): Buffer {
    const key = this.nextHandle++;
    this.handles.set(key, open);
    const buf = Buffer.alloc(4);
    buf.writeUInt32BE(key);
    return buf;
  }
}

function handleKey(handle: Buffer): number | undefined {
  return handle.length === 4 ? handle.readUInt32BE(0) : undefined;
}

function badHandle(): SftpRefusal {
  return new SftpRefusal(STATUS_CODE.FAILURE, 'Invalid handle');
}

interface AttrTarget {
  truncate(size: number): Promise<void>;
  chown(uid: number, gid: number): Promise<void>;
  chmod(mode: number): Promise<void>;
  utimes(atime: number, mtime: number): Promise<void>;
}

function fileTarget(file: FileHandle): AttrTarget {
  return {
    truncate: (size) => file.truncate(size),
    chown: (uid, gid) => file.chown(uid, gid),
    chmod: (mode) => file.chmod(mode),
    utimes: (atime, mtime) => file.utimes(atime, mtime),
  };
}

function pathTarget(path: string): AttrTarget {
  return {
    truncate: (size) => truncate(path, size),
    chown: (uid, gid) => chown(path, uid, gid),
    chmod: (mode) => chmod(path, mode),
    utimes: (atime, mtime) => utimes(path, atime, mtime),
  };
}
