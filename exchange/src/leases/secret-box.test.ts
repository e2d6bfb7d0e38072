import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { SecretBox, loadOrCreateSecretKey, parseSecretKey } from './secret-box.js';

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
