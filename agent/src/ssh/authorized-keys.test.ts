import { randomBytes } from 'node:crypto';
import ssh2 from 'ssh2';
import { describe, expect, it } from 'vitest';
import { decidePublicKey, findKey, parseAuthorizedKey } from './authorized-keys.js';
import type { AuthorizedKey } from './authorized-keys.js';
import { openSshEd25519 } from './openssh-ed25519.js';

function pair(
  type: 'ed25519' | 'rsa' | 'ecdsa',
  bits?: number,
): { line: string; sign: (data: Buffer, hash?: string) => Buffer } {
  // ed25519 through our own writer: ssh2's keygen mangles one key in 256.
  const generated =
    type === 'rsa'
      ? ssh2.utils.generateKeyPairSync('rsa', { bits: bits ?? 2048, comment: 'me@laptop' })
      : type === 'ecdsa'
        ? ssh2.utils.generateKeyPairSync('ecdsa', { bits: 256 })
        : undefined;
  const { privateKey, publicKey } =
    generated === undefined
      ? openSshEd25519('me@laptop')
      : { privateKey: generated.private, publicKey: generated.public };
  const priv = ssh2.utils.parseKey(privateKey);
  if (priv instanceof Error) throw priv;
  return { line: publicKey, sign: (data, hash) => priv.sign(data, hash) };
}

function authorized(line: string): AuthorizedKey {
  const parsed = parseAuthorizedKey(line);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.key;
}

describe('authorized keys (D32: exactly the keys the account had at provisioning)', () => {
  it('accepts ed25519 and RSA of 2048 bits or more, with or without a comment', () => {
    const ed = pair('ed25519');
    expect(parseAuthorizedKey(ed.line)).toMatchObject({ ok: true, key: { type: 'ssh-ed25519' } });
    const withoutComment = ed.line.split(' ').slice(0, 2).join(' ');
    expect(parseAuthorizedKey(withoutComment)).toMatchObject({ ok: true });
    expect(parseAuthorizedKey(pair('rsa', 3072).line)).toMatchObject({
      ok: true,
      key: { type: 'ssh-rsa' },
    });
  });

  it('refuses short RSA keys, other key types, option prefixes and garbage', () => {
    expect(parseAuthorizedKey(pair('rsa', 1024).line)).toMatchObject({ ok: false });
    expect(parseAuthorizedKey(pair('ecdsa').line)).toMatchObject({ ok: false });
    expect(parseAuthorizedKey(`from="10.0.0.1" ${pair('ed25519').line}`)).toMatchObject({
      ok: false,
    });
    expect(parseAuthorizedKey('ssh-ed25519 AAAA')).toMatchObject({ ok: false });
    expect(parseAuthorizedKey('')).toMatchObject({ ok: false });
  });

  it('finds a key only when algorithm and bytes both match', () => {
    const a = authorized(pair('ed25519').line);
    const b = authorized(pair('ed25519').line);
    expect(findKey([a, b], 'ssh-ed25519', b.blob)).toBe(b);
    expect(findKey([a], 'ssh-ed25519', b.blob)).toBeUndefined();
    expect(findKey([a], 'ssh-rsa', a.blob)).toBeUndefined();
    expect(findKey([a], 'ssh-ed25519', a.blob.subarray(1))).toBeUndefined();
    expect(findKey([], 'ssh-ed25519', a.blob)).toBeUndefined();
  });
});

describe('public-key decision', () => {
  const blob = randomBytes(64); // stands for session id + userauth request

  it('answers the query step (no signature) for an authorized key only', () => {
    const mine = pair('ed25519');
    const key = authorized(mine.line);
    expect(decidePublicKey([key], { algo: 'ssh-ed25519', data: key.blob }).outcome).toBe(
      'query-ok',
    );
    const stranger = authorized(pair('ed25519').line);
    expect(decidePublicKey([key], { algo: 'ssh-ed25519', data: stranger.blob }).outcome).toBe(
      'reject',
    );
  });

  it('accepts a valid ed25519 signature and refuses a wrong one', () => {
    const mine = pair('ed25519');
    const key = authorized(mine.line);
    const attempt = { algo: 'ssh-ed25519', data: key.blob, blob, signature: mine.sign(blob) };
    expect(decidePublicKey([key], attempt).outcome).toBe('accept');
    const other = pair('ed25519');
    expect(decidePublicKey([key], { ...attempt, signature: other.sign(blob) }).outcome).toBe(
      'reject',
    );
    expect(decidePublicKey([key], { ...attempt, blob: randomBytes(64) }).outcome).toBe('reject');
  });

  it('accepts RSA signatures with SHA-256 and SHA-512, refuses SHA-1 ones', () => {
    const mine = pair('rsa', 2048);
    const key = authorized(mine.line);
    for (const hashAlgo of ['sha256', 'sha512']) {
      const signature = mine.sign(blob, hashAlgo);
      expect(
        decidePublicKey([key], { algo: 'ssh-rsa', data: key.blob, blob, signature, hashAlgo })
          .outcome,
      ).toBe('accept');
    }
    const sha1 = mine.sign(blob, 'sha1');
    expect(
      decidePublicKey([key], { algo: 'ssh-rsa', data: key.blob, blob, signature: sha1 }),
    ).toEqual({ outcome: 'reject', reason: 'RSA signature with SHA-1' });
  });

  it('a signature without signed data is refused', () => {
    const mine = pair('ed25519');
    const key = authorized(mine.line);
    expect(
      decidePublicKey([key], { algo: 'ssh-ed25519', data: key.blob, signature: mine.sign(blob) })
        .outcome,
    ).toBe('reject');
  });
});
