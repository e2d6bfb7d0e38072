// An ed25519 key pair in OpenSSH's own formats (the `openssh-key-v1`
// private key file and the `ssh-ed25519 AAAA…` public line), from Node's
// crypto. ssh2 1.17.0's generateKeyPairSync('ed25519') strips leading zero
// bytes from the public key, so one key in 256 comes out malformed and
// unreadable (mscdex/ssh2#1390, #1513); this writes all 32 bytes.

import { createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';

// PKCS#8 wrapping of a 32-byte ed25519 seed (RFC 8410).
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const KEY_TYPE = 'ssh-ed25519';

export interface OpenSshKeyPair {
  /** `-----BEGIN OPENSSH PRIVATE KEY-----` file, unencrypted. */
  readonly privateKey: string;
  /** `ssh-ed25519 AAAA… comment`. */
  readonly publicKey: string;
}

export function ed25519PublicOf(seed: Buffer): Buffer {
  if (seed.length !== 32) throw new RangeError('an ed25519 seed is 32 bytes');
  const key = createPrivateKey({
    key: Buffer.concat([PKCS8_PREFIX, seed]),
    format: 'der',
    type: 'pkcs8',
  });
  const jwk = createPublicKey(key).export({ format: 'jwk' });
  return Buffer.from(jwk.x ?? '', 'base64url');
}

export function openSshEd25519(comment = '', seed: Buffer = randomBytes(32)): OpenSshKeyPair {
  const pub = ed25519PublicOf(seed);
  const publicBlob = Buffer.concat([sshString(KEY_TYPE), sshString(pub)]);
  const check = randomBytes(4);
  const body = Buffer.concat([
    check,
    check,
    sshString(KEY_TYPE),
    sshString(pub),
    sshString(Buffer.concat([seed, pub])),
    sshString(comment),
  ]);
  // Padded with 1, 2, 3, … to the cipher block size (8 for "none").
  const padLength = (8 - (body.length % 8)) % 8;
  const padding = Buffer.from(Array.from({ length: padLength }, (_, i) => i + 1));
  const file = Buffer.concat([
    Buffer.from('openssh-key-v1\0', 'latin1'),
    sshString('none'), // cipher
    sshString('none'), // kdf
    sshString(''), // kdf options
    uint32(1), // number of keys
    sshString(publicBlob),
    sshString(Buffer.concat([body, padding])),
  ]);
  const lines = file.toString('base64').match(/.{1,70}/g) ?? [];
  return {
    privateKey: `-----BEGIN OPENSSH PRIVATE KEY-----\n${lines.join('\n')}\n-----END OPENSSH PRIVATE KEY-----\n`,
    publicKey: `${KEY_TYPE} ${publicBlob.toString('base64')}${comment === '' ? '' : ` ${comment}`}`,
  };
}

function uint32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

function sshString(value: string | Buffer): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value) : value;
  return Buffer.concat([uint32(bytes.length), bytes]);
}
