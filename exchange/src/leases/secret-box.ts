// D28: a lease's kubeconfig is stored encrypted at rest: AES-256-GCM with a
// random 96-bit nonce per message, the lease id as additional data (a
// ciphertext copied to another lease's row does not open), and a version
// byte so the format can change. The key comes from GPUX_SECRET_KEY
// (base64 of 32 bytes); the embedded default generates one and keeps it
// under GPUX_DATA_DIR (main.ts).

import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';

const VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
export const SECRET_KEY_BYTES = 32;

export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== SECRET_KEY_BYTES) {
      throw new RangeError(`the secret key must be ${SECRET_KEY_BYTES} bytes, got ${key.length}`);
    }
  }

  seal(plaintext: string, additionalData: string): Buffer {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(Buffer.from(additionalData, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.of(VERSION), nonce, body, cipher.getAuthTag()]);
  }

  /** Throws when the box was not sealed with this key for this additional data. */
  open(sealed: Uint8Array, additionalData: string): string {
    const box = Buffer.from(sealed);
    if (box.length < 1 + NONCE_BYTES + TAG_BYTES || box[0] !== VERSION) {
      throw new Error('not a sealed box of this version');
    }
    const nonce = box.subarray(1, 1 + NONCE_BYTES);
    const tag = box.subarray(box.length - TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.key, nonce);
    decipher.setAAD(Buffer.from(additionalData, 'utf8'));
    decipher.setAuthTag(tag);
    const body = box.subarray(1 + NONCE_BYTES, box.length - TAG_BYTES);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
  }
}

/** GPUX_SECRET_KEY's value: base64 of 32 random bytes (`openssl rand -base64 32`). */
export function parseSecretKey(text: string): Buffer | undefined {
  const key = Buffer.from(text.trim(), 'base64');
  return key.length === SECRET_KEY_BYTES && key.toString('base64') === text.trim()
    ? key
    : undefined;
}

/** The embedded default's key: read from `file`, or made once and kept there (mode 0600). */
export function loadOrCreateSecretKey(file: string): Buffer {
  if (existsSync(file)) {
    const key = parseSecretKey(readFileSync(file, 'utf8'));
    if (key === undefined) throw new Error(`${file} does not hold a base64 key of 32 bytes`);
    return key;
  }
  const key = randomBytes(SECRET_KEY_BYTES);
  writeFileSync(file, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return key;
}
