import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  HOST_KEY_FILE,
  HostKeyError,
  fingerprintOf,
  hostKeyFromPrivate,
  loadOrCreateHostKey,
} from './host-key.js';
import type { Logger } from './logger.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gpux-hostkey-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  const nothing = (): void => undefined;
  return {
    warnings,
    error: nothing,
    info: nothing,
    debug: nothing,
    warn: (_obj: object | string, msg?: string) => warnings.push(msg ?? ''),
  };
}

describe('ssh host key (D32: clients pin it)', () => {
  it('is generated once as ed25519 in the state directory, mode 0600, and reused', async () => {
    const stateDir = join(dir, 'state');
    const first = await loadOrCreateHostKey(stateDir);
    expect(first.publicKey).toMatch(/^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5[A-Za-z0-9+/]+=*$/);
    expect(statSync(join(stateDir, HOST_KEY_FILE)).mode & 0o777).toBe(0o600);
    expect(statSync(stateDir).mode & 0o777).toBe(0o700);
    const again = await loadOrCreateHostKey(stateDir);
    expect(again.publicKey).toBe(first.publicKey);
    expect(again.fingerprint).toBe(first.fingerprint);
    expect(readdirSync(stateDir)).toEqual([HOST_KEY_FILE]); // no temporary file left
  });

  it('gives the OpenSSH SHA256 fingerprint of the public key blob', async () => {
    const key = await loadOrCreateHostKey(dir);
    const blob = Buffer.from(key.publicKey.split(' ')[1] ?? '', 'base64');
    const expected = createHash('sha256').update(blob).digest('base64').replace(/=+$/, '');
    expect(key.fingerprint).toBe(`SHA256:${expected}`);
    expect(key.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect(fingerprintOf(blob)).toBe(key.fingerprint);
  });

  it('two agents starting at once on one directory end up with the same key', async () => {
    const keys = await Promise.all([1, 2, 3, 4].map(() => loadOrCreateHostKey(dir)));
    expect(new Set(keys.map((k) => k.publicKey)).size).toBe(1);
  });

  it('tightens a key file that others can read to 0600, and says so', async () => {
    const key = await loadOrCreateHostKey(dir);
    const path = join(dir, HOST_KEY_FILE);
    chmodSync(path, 0o644);
    const logger = recordingLogger();
    const again = await loadOrCreateHostKey(dir, logger);
    expect(again.publicKey).toBe(key.publicKey);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(logger.warnings).toHaveLength(1);
  });

  it('refuses a host key that is not ed25519', async () => {
    const rsa = ssh2.utils.generateKeyPairSync('rsa', { bits: 2048 });
    writeFileSync(join(dir, HOST_KEY_FILE), rsa.private, { mode: 0o600 });
    await expect(loadOrCreateHostKey(dir)).rejects.toThrow(HostKeyError);
    expect(() => hostKeyFromPrivate(Buffer.from('not a key'))).toThrow(HostKeyError);
  });
});
