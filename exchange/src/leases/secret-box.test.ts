import { randomBytes } from 'node:crypto';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { SecretBox, loadOrCreateSecretKey, parseSecretKey, parseSecretKeys } from './secret-box.js';

const key = Buffer.alloc(32, 7);

describe('SecretBox (D28: kubeconfigs encrypted at rest)', () => {
  it('opens what it sealed, and the ciphertext does not show the plaintext', () => {
    const box = new SecretBox(key);
    const sealed = box.seal('token: s3cret', 'lse_1');
    expect(sealed.includes(Buffer.from('s3cret'))).toBe(false);
    expect(box.open(sealed, 'lse_1')).toBe('token: s3cret');
    // A fresh nonce each time: the same text seals differently.
    expect(box.seal('token: s3cret', 'lse_1').equals(sealed)).toBe(false);
  });

  it('refuses another lease, another key, or a changed byte', () => {
    const box = new SecretBox(key);
    const sealed = box.seal('kubeconfig', 'lse_1');
    expect(() => box.open(sealed, 'lse_2')).toThrow();
    expect(() => new SecretBox(Buffer.alloc(32, 8)).open(sealed, 'lse_1')).toThrow();
    const tampered = Buffer.from(sealed);
    tampered[20] = (tampered[20] ?? 0) ^ 1;
    expect(() => box.open(tampered, 'lse_1')).toThrow();
  });

  it('takes only a base64 key of 32 bytes', () => {
    expect(parseSecretKey(key.toString('base64'))?.equals(key)).toBe(true);
    expect(parseSecretKey(Buffer.alloc(16).toString('base64'))).toBeUndefined();
    expect(parseSecretKey('not base64!')).toBeUndefined();
    expect(() => new SecretBox(Buffer.alloc(16))).toThrow(RangeError);
  });

  it('makes the embedded default key once, private to its owner, and reads it back', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gpux-key-')), 'secret.key');
    const made = loadOrCreateSecretKey(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(loadOrCreateSecretKey(file).equals(made)).toBe(true);
  });
});

describe('D28: a list of keys (rotation)', () => {
  it('the newest seals, every key opens, and opened() says which', () => {
    const [oldKey, newKey] = [randomBytes(32), randomBytes(32)];
    const before = new SecretBox(oldKey).seal('kubeconfig', 'lea_1');
    const both = new SecretBox([newKey, oldKey]);
    expect(both.opened(before, 'lea_1')).toEqual({ plaintext: 'kubeconfig', newest: false });
    const after = both.seal('kubeconfig', 'lea_1');
    expect(both.opened(after, 'lea_1')).toEqual({ plaintext: 'kubeconfig', newest: true });
    expect(new SecretBox(newKey).open(after, 'lea_1')).toBe('kubeconfig');
    expect(() => new SecretBox(oldKey).open(after, 'lea_1')).toThrow(/none of the secret keys/);
  });

  it('GPUX_SECRET_KEY takes several keys, newest first, comma-separated', () => {
    const [a, b] = [randomBytes(32), randomBytes(32)];
    expect(parseSecretKeys(`${a.toString('base64')},${b.toString('base64')}`)).toEqual([a, b]);
    expect(parseSecretKeys(a.toString('base64'))).toEqual([a]);
    expect(parseSecretKeys(`${a.toString('base64')},nope`)).toBeUndefined();
  });
});
