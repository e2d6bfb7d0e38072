import { createHash, randomBytes } from 'node:crypto';
import ssh2 from 'ssh2';
import { describe, expect, it } from 'vitest';
import { ed25519PublicOf, openSshEd25519 } from './openssh-ed25519.js';

/** A seed whose public key starts with a zero byte: what ssh2's own keygen mangles. */
function seedWithLeadingZeroPublicKey(): Buffer {
  for (let i = 0; ; i++) {
    const seed = createHash('sha256').update(`seed ${i}`).digest();
    if (ed25519PublicOf(seed)[0] === 0) return seed;
  }
}

describe('OpenSSH ed25519 keys (ssh2 keygen drops leading zero bytes: mscdex/ssh2#1390)', () => {
  it('writes a key ssh2 reads back, that signs and verifies', () => {
    const pair = openSshEd25519('me@host');
    const priv = ssh2.utils.parseKey(pair.privateKey);
    const pub = ssh2.utils.parseKey(pair.publicKey);
    if (priv instanceof Error || pub instanceof Error) throw new Error('unreadable key');
    expect(priv.type).toBe('ssh-ed25519');
    expect(priv.comment).toBe('me@host');
    expect(priv.getPublicSSH().equals(pub.getPublicSSH())).toBe(true);
    const data = randomBytes(40);
    expect(pub.verify(data, priv.sign(data))).toBe(true);
    expect(pair.publicKey).toMatch(/^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI[A-Za-z0-9+/]+ me@host$/);
  });

  it('keeps all 32 bytes of a public key that starts with zero', () => {
    const seed = seedWithLeadingZeroPublicKey();
    const pair = openSshEd25519('', seed);
    const priv = ssh2.utils.parseKey(pair.privateKey);
    if (priv instanceof Error) throw priv;
    const blob = priv.getPublicSSH();
    expect(blob.length).toBe(4 + 11 + 4 + 32);
    expect(blob.subarray(19)).toEqual(ed25519PublicOf(seed));
    expect(pair.publicKey.split(' ')).toHaveLength(2);
  });

  it('pads the private section to whole 8-byte blocks for every comment length', () => {
    for (let n = 0; n < 8; n++) {
      const parsed = ssh2.utils.parseKey(openSshEd25519('c'.repeat(n)).privateKey);
      expect(parsed).not.toBeInstanceOf(Error);
    }
  });
});
