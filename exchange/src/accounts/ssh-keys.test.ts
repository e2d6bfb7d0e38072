import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { GpuxError } from '@gpux/shared';
import { describe, expect, it } from 'vitest';

import { MIN_RSA_BITS, parsePublicKey } from './ssh-keys.js';

// Public keys made once by ssh-keygen, with the fingerprints it printed for
// them (testing/ssh-keys/fingerprints.txt); no private key is kept.
const FIXTURES = new URL('./testing/ssh-keys/', import.meta.url);
const fixture = (name: string): string => readFileSync(new URL(name, FIXTURES), 'utf8');
const SSH_KEYGEN_FINGERPRINTS = new Map(
  fixture('fingerprints.txt')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const [file, , fingerprint] = l.split(' ');
      return [file ?? '', fingerprint ?? ''];
    }),
);

/** The SSH wire form of a string field. */
function field(b: Buffer | string): Buffer {
  const data = typeof b === 'string' ? Buffer.from(b) : b;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  return Buffer.concat([len, data]);
}

function line(fields: (Buffer | string)[], comment = 'me@laptop'): string {
  const type = fields[0];
  return `${String(type)} ${Buffer.concat(fields.map(field)).toString('base64')} ${comment}`;
}

/** A fresh ed25519 public key in OpenSSH's one-line form. */
function ed25519Line(comment?: string): string {
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  return line(['ssh-ed25519', raw], comment);
}

function refusal(text: string): GpuxError {
  try {
    parsePublicKey(text);
  } catch (err) {
    if (err instanceof GpuxError) return err;
    throw err;
  }
  throw new Error('the key was accepted');
}

describe('parsePublicKey (D32)', () => {
  it.each([
    ['rsa-2048.pub', 'ssh-rsa'],
    ['rsa-3072.pub', 'ssh-rsa'],
    ['ecdsa-256.pub', 'ecdsa-sha2-nistp256'],
    ['ecdsa-384.pub', 'ecdsa-sha2-nistp384'],
    ['ecdsa-521.pub', 'ecdsa-sha2-nistp521'],
    ['ed25519.pub', 'ssh-ed25519'],
  ])("reads %s made by ssh-keygen, with ssh-keygen's own fingerprint", (file, type) => {
    const text = fixture(file);
    const key = parsePublicKey(text);
    expect(key.type).toBe(type);
    expect(key.fingerprint).toBe(SSH_KEYGEN_FINGERPRINTS.get(file));
    expect(key.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    // Stored without the comment.
    expect(key.normalized).toBe(text.split(' ').slice(0, 2).join(' '));
  });

  it('keeps the key, not the comment or the spacing, for the fingerprint', () => {
    const text = ed25519Line('first');
    const [type, data] = text.split(' ');
    const other = parsePublicKey(`  ${type}\t${data}   second comment  \n`);
    expect(other).toEqual(parsePublicKey(text));
  });

  it(`refuses an RSA key under ${MIN_RSA_BITS} bits, saying why`, () => {
    const err = refusal(fixture('rsa-1024.pub'));
    expect(err.code).toBe('invalid_request');
    expect(err.message).toBe(
      'public_key: an RSA key must have at least 2048 bits; this one has 1024',
    );
  });

  it('refuses a DSA key (made by ssh-keygen) and the security-key kinds the gateway cannot verify', () => {
    expect(refusal(fixture('dsa-1024.pub')).message).toMatch(/key type ssh-dss is not accepted/);
    const sk = line(['sk-ssh-ed25519@openssh.com', Buffer.alloc(32, 7), 'ssh:']);
    expect(refusal(sk).message).toMatch(/not accepted/);
  });

  const ed = ed25519Line();
  const [edType, edData] = ed.split(' ') as [string, string];
  const edBlob = Buffer.from(edData, 'base64');
  const ecdsa = fixture('ecdsa-256.pub').split(' ');
  const ecdsaBlob = Buffer.from(ecdsa[1] ?? '', 'base64');
  // The last byte of the curve point changed: almost surely off the curve.
  const offCurve = Buffer.from(ecdsaBlob);
  offCurve[offCurve.length - 1] = (offCurve[offCurve.length - 1] ?? 0) ^ 1;

  const MISMATCH = /key data is truncated or does not match its type/;
  it.each([
    ['a private key', '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n', /one line/],
    ['a DSA key', `ssh-dss ${Buffer.from('x').toString('base64')}`, /not accepted/],
    ['a truncated key', ed.slice(0, 40), MISMATCH],
    ['a relabelled key', ed.replace(/^ssh-ed25519/, 'ssh-rsa'), MISMATCH],
    [
      'a key with bytes after its fields',
      `${edType} ${Buffer.concat([edBlob, Buffer.from([0, 0, 0, 0])]).toString('base64')}`,
      MISMATCH,
    ],
    ['an ed25519 key of 31 bytes', line(['ssh-ed25519', Buffer.alloc(31, 1)]), MISMATCH],
    [
      'an ECDSA point off its curve',
      `${ecdsa[0]} ${offCurve.toString('base64')}`,
      /not a valid key/,
    ],
    ['two keys on two lines', `${ed}\n${ed25519Line()}`, /one line/],
    [
      'a certificate',
      line(['ssh-ed25519-cert-v01@openssh.com', Buffer.alloc(32), edBlob]),
      /not accepted/,
    ],
    ['no key data', 'ssh-ed25519', /expected "<type> <base64> \[comment\]"/],
    ['data that is not base64', 'ssh-ed25519 not*base64', /not base64/],
    ['an empty line', '   ', /expected "<type> <base64> \[comment\]"/],
  ])('refuses %s with invalid_request', (_what, text, why) => {
    const err = refusal(text);
    expect(err.code).toBe('invalid_request');
    expect(err.message).toMatch(/^public_key: /);
    expect(err.message).toMatch(why);
  });
});
