// The SFTP subsystem against a stand-in for ssh2's SFTP object: requests
// go in as ssh2 emits them, answers are recorded by request id.

import { EventEmitter } from 'node:events';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import type { SFTPWrapper } from 'ssh2';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfinedRoot } from './confined-root.js';
import { SILENT_LOGGER } from './logger.js';
import { SftpSession } from './sftp-session.js';

const { OPEN_MODE, STATUS_CODE } = ssh2.utils.sftp;

type Answer =
  | { type: 'status'; code: number; message?: string }
  | { type: 'handle'; handle: Buffer }
  | { type: 'data'; data: Buffer }
  | { type: 'name'; names: { filename: string; longname: string }[] }
  | { type: 'attrs'; attrs: { size: number; mode: number } };

class FakeSftp extends EventEmitter {
  private readonly waiting = new Map<number, (a: Answer) => void>();
  readonly order: number[] = [];
  private nextId = 1;

  status(id: number, code: number, message?: string): void {
    this.answer(id, { type: 'status', code, ...(message === undefined ? {} : { message }) });
  }
  handle(id: number, handle: Buffer): void {
    this.answer(id, { type: 'handle', handle });
  }
  data(id: number, data: Buffer): void {
    this.answer(id, { type: 'data', data: Buffer.from(data) });
  }
  name(id: number, names: { filename: string; longname: string }[]): void {
    this.answer(id, { type: 'name', names });
  }
  attrs(id: number, attrs: { size: number; mode: number }): void {
    this.answer(id, { type: 'attrs', attrs });
  }

  request(event: string, ...args: unknown[]): Promise<Answer> {
    const id = this.nextId++;
    const answered = new Promise<Answer>((resolve) => this.waiting.set(id, resolve));
    this.emit(event, id, ...args);
    return answered;
  }

  private answer(id: number, a: Answer): void {
    this.order.push(id);
    this.waiting.get(id)?.(a);
  }
}

let base: string;
let ws: string;
let fake: FakeSftp;
let session: SftpSession;

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'gpux-sftp-')));
  ws = join(base, 'ws');
  mkdirSync(ws);
  writeFileSync(join(base, 'secret'), 'host file');
  symlinkSync(join(base, 'secret'), join(ws, 'escape'));
  fake = new FakeSftp();
  session = new SftpSession(fake as unknown as SFTPWrapper, ConfinedRoot.open(ws), SILENT_LOGGER);
});
afterEach(async () => {
  await session.close();
  rmSync(base, { recursive: true, force: true });
});

async function handleOf(answer: Promise<Answer>): Promise<Buffer> {
  const a = await answer;
  if (a.type !== 'handle') throw new Error(`expected a handle, got ${JSON.stringify(a)}`);
  return a.handle;
}

describe('SFTP subsystem confined to the workspace', () => {
  it('writes, reads back and closes a file; the client sees the workspace as /', async () => {
    const create = OPEN_MODE.WRITE | OPEN_MODE.CREAT | OPEN_MODE.TRUNC;
    const h = await handleOf(fake.request('OPEN', '/dir-less.txt', create, {}));
    const writes = [0, 5].map((offset, i) =>
      fake.request('WRITE', h, offset, Buffer.from(['hello', ' world'][i] ?? '')),
    );
    for (const w of await Promise.all(writes)) expect(w).toEqual({ type: 'status', code: 0 });
    expect(await fake.request('CLOSE', h)).toEqual({ type: 'status', code: STATUS_CODE.OK });
    expect(readFileSync(join(ws, 'dir-less.txt'), 'utf8')).toBe('hello world');

    const r = await handleOf(fake.request('OPEN', 'dir-less.txt', OPEN_MODE.READ, {}));
    const read = await fake.request('READ', r, 6, 100);
    expect(read.type === 'data' && read.data.toString()).toBe('world');
    expect(await fake.request('READ', r, 11, 100)).toMatchObject({ code: STATUS_CODE.EOF });
    expect(await fake.request('REALPATH', '.')).toMatchObject({ names: [{ filename: '/' }] });
  });

  it('answers requests in the order they came (scp truncates otherwise)', async () => {
    const h = await handleOf(fake.request('OPEN', 'big', OPEN_MODE.WRITE | OPEN_MODE.CREAT, {}));
    const chunk = Buffer.alloc(32 * 1024, 7);
    const first = fake.order.length;
    const ids = Array.from({ length: 40 }, (_, i) =>
      fake.request('WRITE', h, i * chunk.length, chunk),
    );
    await Promise.all(ids);
    const answered = fake.order.slice(first);
    expect(answered).toEqual([...answered].sort((a, b) => a - b));
  });

  it('lists, makes, renames and removes', async () => {
    expect(await fake.request('MKDIR', 'd1', {})).toMatchObject({ code: STATUS_CODE.OK });
    writeFileSync(join(ws, 'd1', 'f'), 'x');
    expect(await fake.request('RENAME', 'd1/f', 'd1/g')).toMatchObject({ code: STATUS_CODE.OK });
    writeFileSync(join(ws, 'd1', 'h'), 'y');
    // SFTP v3 rename does not replace.
    expect(await fake.request('RENAME', 'd1/h', 'd1/g')).toMatchObject({
      code: STATUS_CODE.FAILURE,
    });
    const dh = await handleOf(fake.request('OPENDIR', '/d1'));
    const listed = await fake.request('READDIR', dh);
    expect(listed.type === 'name' && listed.names.map((n) => n.filename).sort()).toEqual([
      'g',
      'h',
    ]);
    expect(await fake.request('READDIR', dh)).toMatchObject({ code: STATUS_CODE.EOF });
    expect(await fake.request('REMOVE', 'd1/g')).toMatchObject({ code: STATUS_CODE.OK });
    expect(await fake.request('REMOVE', 'd1/h')).toMatchObject({ code: STATUS_CODE.OK });
    expect(await fake.request('RMDIR', 'd1')).toMatchObject({ code: STATUS_CODE.OK });
    expect(existsSync(join(ws, 'd1'))).toBe(false);
  });

  it('refuses to read, write or list through a symlink that leads out', async () => {
    expect(await fake.request('OPEN', 'escape', OPEN_MODE.READ, {})).toMatchObject({
      code: STATUS_CODE.PERMISSION_DENIED,
    });
    expect(
      await fake.request('OPEN', 'escape', OPEN_MODE.WRITE | OPEN_MODE.TRUNC, {}),
    ).toMatchObject({ code: STATUS_CODE.PERMISSION_DENIED });
    expect(await fake.request('STAT', 'escape')).toMatchObject({
      code: STATUS_CODE.PERMISSION_DENIED,
    });
    expect(await fake.request('READLINK', 'escape')).toMatchObject({
      code: STATUS_CODE.PERMISSION_DENIED,
    });
    expect(await fake.request('SETSTAT', 'escape', { mode: 0o777 })).toMatchObject({
      code: STATUS_CODE.PERMISSION_DENIED,
    });
    expect(readFileSync(join(base, 'secret'), 'utf8')).toBe('host file');
    // The link itself is the workspace's: it can be seen and removed.
    expect(await fake.request('LSTAT', 'escape')).toMatchObject({ type: 'attrs' });
    expect(await fake.request('REMOVE', 'escape')).toMatchObject({ code: STATUS_CODE.OK });
    expect(existsSync(join(base, 'secret'))).toBe(true);
  });

  it('does not create a file at the target of a dangling link', async () => {
    symlinkSync(join(base, 'planted'), join(ws, 'trap'));
    const create = OPEN_MODE.WRITE | OPEN_MODE.CREAT;
    expect(await fake.request('OPEN', 'trap', create, {})).toMatchObject({
      code: STATUS_CODE.PERMISSION_DENIED,
    });
    expect(existsSync(join(base, 'planted'))).toBe(false);
  });

  it('keeps .. at the workspace root and refuses to remove the root', async () => {
    expect(await fake.request('REALPATH', '../../..')).toMatchObject({
      names: [{ filename: '/' }],
    });
    expect(await fake.request('STAT', '/../secret')).toMatchObject({
      code: STATUS_CODE.NO_SUCH_FILE,
    });
    expect(await fake.request('RMDIR', '/')).toMatchObject({
      code: STATUS_CODE.PERMISSION_DENIED,
    });
    expect(await fake.request('SYMLINK', '/etc/passwd', 'x')).toMatchObject({
      code: STATUS_CODE.OP_UNSUPPORTED,
    });
  });

  it('answers a bad handle with a failure, not a crash', async () => {
    expect(await fake.request('READ', Buffer.from([1, 2, 3, 4]), 0, 10)).toMatchObject({
      code: STATUS_CODE.FAILURE,
    });
    expect(await fake.request('CLOSE', Buffer.from('x'))).toMatchObject({
      code: STATUS_CODE.FAILURE,
    });
  });
});
