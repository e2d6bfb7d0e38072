// D28: a lease's kubeconfig is stored encrypted at rest: AES-256-GCM with a
// random 96-bit nonce per message, the lease id as additional data (a
// ciphertext copied to another lease's row does not open), and a version
// byte so the format can change. The keys come from GPUX_SECRET_KEY (base64
// of 32 bytes each, newest first, comma-separated): the newest seals, every
// one opens, so a key is rotated without a kubeconfig that stops opening
// (docs/operations.md, "Rotating the secret key"). The embedded default
// generates one and keeps it under GPUX_DATA_DIR (server.ts).

import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';

const VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
export const SECRET_KEY_BYTES = 32;

export class SecretBox {
  private readonly keys: readonly Buffer[];

  /** `keys`: the newest first; it seals, and every one of them opens. */
  constructor(keys: Buffer | readonly Buffer[]) {
    this.keys = Buffer.isBuffer(keys) ? [keys] : keys;
    if (this.keys.length === 0) throw new RangeError('a secret box needs a key');
    for (const key of this.keys) {
      if (key.length !== SECRET_KEY_BYTES) {
        throw new RangeError(`the secret key must be ${SECRET_KEY_BYTES} bytes, got ${key.length}`);
      }
    }
  }

  /** How many keys open (the first of them seals). */
  get keyCount(): number {
    return this.keys.length;
  }

  seal(plaintext: string, additionalData: string): Buffer {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.newest, nonce);
    cipher.setAAD(Buffer.from(additionalData, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.of(VERSION), nonce, body, cipher.getAuthTag()]);
  }

  /** Throws when the box was not sealed with one of these keys for this additional data. */
  open(sealed: Uint8Array, additionalData: string): string {
    return this.opened(sealed, additionalData).plaintext;
  }

  /** The plaintext, and whether the newest key sealed it (else a rotation has it to re-seal). */
  opened(sealed: Uint8Array, additionalData: string): { plaintext: string; newest: boolean } {
    const box = Buffer.from(sealed);
    if (box.length < 1 + NONCE_BYTES + TAG_BYTES || box[0] !== VERSION) {
      throw new Error('not a sealed box of this version');
    }
    const nonce = box.subarray(1, 1 + NONCE_BYTES);
    const tag = box.subarray(box.length - TAG_BYTES);
    const body = box.subarray(1 + NONCE_BYTES, box.length - TAG_BYTES);
    for (const [i, key] of this.keys.entries()) {
      const decipher = createDecipheriv('aes-256-gcm', key, nonce);
      decipher.setAAD(Buffer.from(additionalData, 'utf8'));
      decipher.setAuthTag(tag);
      try {
        const plaintext = Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
        return { plaintext, newest: i === 0 };
      } catch {
        // GCM's tag did not verify under this key: the next one, if any.
      }
    }
    throw new Error('sealed with none of the secret keys, or for another lease');
  }

  private get newest(): Buffer {
    return this.keys[0] as Buffer;
  }
}

/** GPUX_SECRET_KEY's value: one key, or several newest first, comma-separated. */
export function parseSecretKeys(text: string): Buffer[] | undefined {
  const keys = text.split(',').map((k) => parseSecretKey(k.trim()));
  return keys.every((k) => k !== undefined) ? keys : undefined;
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
