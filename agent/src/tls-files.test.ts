// The TLS files watcher (issue 23): renewed files are taken without a
// restart, whether written in place, renamed over the old ones, or swapped
// in by a symlink as the kubelet does for a Secret volume; a pair that does
// not fit (a certificate without its key yet) is refused and the one in use
// kept until the key arrives.

import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { SILENT_LOGGER } from './logger.js';
import { selfSigned } from './testing/certificates.js';
import type { PemPair as Pair } from './testing/certificates.js';
import { TlsFilesWatcher, checkCertificates, checkKeyPair } from './tls-files.js';
import type { TlsCheck } from './tls-files.js';

const root = mkdtempSync(join(tmpdir(), 'gpux-tls-files-'));
let n = 0;

const serial = (pem: Buffer): string => new X509Certificate(pem).serialNumber;

/** A watcher on `files`, what it applied, and a way to wait for its next check's result. */
function watcherOn(files: { cert: string; key: string }, initial: Pair) {
  const applied: Pair[] = [];
  const waiting: ((r: TlsCheck) => void)[] = [];
  const watcher = new TlsFilesWatcher({
    name: 'test certificate',
    files,
    initial,
    apply: (p) => {
      checkKeyPair(p.cert, p.key);
      applied.push(p);
    },
    logger: SILENT_LOGGER,
    onCheck: (r) => waiting.shift()?.(r),
  });
  watchers.push(watcher);
  /** The first check that reloads (the watch may report a change in several events). */
  const reloaded = async (): Promise<void> => {
    for (;;) {
      const r = await new Promise<TlsCheck>((resolve) => waiting.push(resolve));
      if (r === 'reloaded') return;
    }
  };
  return { watcher, applied, reloaded };
}

const watchers: TlsFilesWatcher<string>[] = [];
afterEach(() => {
  for (const w of watchers.splice(0)) w.close();
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function freshDir(): string {
  const dir = join(root, `files-${++n}`);
  mkdirSync(dir);
  return dir;
}

describe('TlsFilesWatcher', () => {
  it('takes a new pair renamed over the old one, and nothing while the files stay the same', async () => {
    const dir = freshDir();
    const old = selfSigned('old');
    const files = { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') };
    writeFileSync(files.cert, old.cert);
    writeFileSync(files.key, old.key);
    const { watcher, applied } = watcherOn(files, old);

    expect(await watcher.check()).toBe('unchanged');
    const next = selfSigned('next');
    writeFileSync(`${files.key}.tmp`, next.key);
    renameSync(`${files.key}.tmp`, files.key);
    writeFileSync(`${files.cert}.tmp`, next.cert);
    renameSync(`${files.cert}.tmp`, files.cert);
    expect(await watcher.check()).toBe('reloaded');
    expect(applied.map((p) => serial(p.cert))).toEqual([serial(next.cert)]);
    expect(await watcher.check()).toBe('unchanged');
  });

  it('refuses a certificate whose key has not come yet, keeps the old pair, and takes the pair once the key is there', async () => {
    const dir = freshDir();
    const old = selfSigned('old');
    const files = { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') };
    writeFileSync(files.cert, old.cert);
    writeFileSync(files.key, old.key);
    const { watcher, applied } = watcherOn(files, old);

    const next = selfSigned('next');
    writeFileSync(files.cert, next.cert);
    expect(await watcher.check()).toBe('refused');
    // Half written: refused as well.
    writeFileSync(files.key, next.key.subarray(0, 40));
    expect(await watcher.check()).toBe('refused');
    expect(applied).toEqual([]);

    writeFileSync(files.key, next.key);
    expect(await watcher.check()).toBe('reloaded');
    expect(applied.map((p) => serial(p.cert))).toEqual([serial(next.cert)]);
  });

  it('keeps the pair in use while a file is missing', async () => {
    const dir = freshDir();
    const old = selfSigned('old');
    const files = { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') };
    writeFileSync(files.cert, old.cert);
    const { watcher, applied } = watcherOn(files, old);
    expect(await watcher.check()).toBe('refused');
    writeFileSync(files.key, old.key);
    expect(await watcher.check()).toBe('unchanged');
    expect(applied).toEqual([]);
  });

  it('sees by itself a Secret volume swapped by its ..data symlink, as the kubelet renews it', async () => {
    // The kubelet's layout: tls.crt → ..data/tls.crt, ..data → ..<timestamp>/.
    const dir = freshDir();
    const old = selfSigned('old');
    const version = (name: string, p: Pair): void => {
      mkdirSync(join(dir, name));
      writeFileSync(join(dir, name, 'tls.crt'), p.cert);
      writeFileSync(join(dir, name, 'tls.key'), p.key);
    };
    version('..v1', old);
    symlinkSync('..v1', join(dir, '..data'));
    symlinkSync('..data/tls.crt', join(dir, 'tls.crt'));
    symlinkSync('..data/tls.key', join(dir, 'tls.key'));
    const files = { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') };
    const { watcher, applied, reloaded } = watcherOn(files, old);
    watcher.start();

    const next = selfSigned('renewed');
    version('..v2', next);
    const done = reloaded();
    symlinkSync('..v2', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    await done;
    expect(applied.map((p) => serial(p.cert))).toEqual([serial(next.cert)]);
  });
});

describe('checkKeyPair and checkCertificates', () => {
  it('say what is wrong with a pair', () => {
    const a = selfSigned('a');
    const b = selfSigned('b');
    expect(serial(checkKeyPair(a.cert, a.key).raw)).toBe(serial(a.cert));
    expect(() => checkKeyPair(a.cert, b.key)).toThrow('not the one of the certificate');
    expect(() => checkKeyPair(a.cert.subarray(0, 50), a.key)).toThrow('certificate cannot be read');
    expect(() => checkKeyPair(a.cert, Buffer.from('nope'))).toThrow('private key cannot be read');
    expect(() => checkCertificates(Buffer.concat([a.cert, b.cert]))).not.toThrow();
    expect(() => checkCertificates(Buffer.from('nope'))).toThrow('no certificate');
  });
});
