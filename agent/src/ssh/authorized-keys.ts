// Public-key authentication against exactly a lease's authorized keys (D32).
// Key algorithm and key bytes are compared in constant time over every key;
// a request without a signature is the client's query ("would you take this
// key?") and is answered yes; a request with one must verify.

import { createPublicKey, timingSafeEqual } from 'node:crypto';
// ssh2 is CommonJS without named exports Node can detect: import the object.
import ssh2 from 'ssh2';
import type { ParsedKey } from 'ssh2';
import { fingerprintOf } from './host-key.js';

export const MIN_RSA_BITS = 2048;

export interface AuthorizedKey {
  readonly type: 'ssh-ed25519' | 'ssh-rsa';
  readonly blob: Buffer;
  readonly fingerprint: string;
  readonly key: ParsedKey;
}

export type ParsedAuthorizedKey =
  | { readonly ok: true; readonly key: AuthorizedKey }
  | { readonly ok: false; readonly reason: string };

// `type base64 [comment]`; a line with options (`from="…" ssh-ed25519 …`)
// is refused rather than honoured without its restrictions.
const KEY_LINE = /^(ssh-ed25519|ssh-rsa) ([A-Za-z0-9+/]+={0,2})(?: .*)?$/;

export function parseAuthorizedKey(line: string): ParsedAuthorizedKey {
  const m = KEY_LINE.exec(line.trim());
  if (m === null) return { ok: false, reason: 'not an ssh-ed25519 or ssh-rsa public key line' };
  const parsed = ssh2.utils.parseKey(`${m[1]} ${m[2]}`);
  if (parsed instanceof Error) return { ok: false, reason: parsed.message };
  if (parsed.isPrivateKey()) return { ok: false, reason: 'a private key' };
  const type = parsed.type;
  if (type !== 'ssh-ed25519' && type !== 'ssh-rsa') {
    return { ok: false, reason: `key type ${type} is not accepted` };
  }
  if (type === 'ssh-rsa') {
    const bits = createPublicKey(parsed.getPublicPEM()).asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < MIN_RSA_BITS) return { ok: false, reason: `RSA key of ${bits} bits (< 2048)` };
  }
  const blob = parsed.getPublicSSH();
  return { ok: true, key: { type, blob, fingerprint: fingerprintOf(blob), key: parsed } };
}

/** What the client sent in one `publickey` authentication request. */
export interface PublicKeyAttempt {
  readonly algo: string;
  readonly data: Buffer;
  readonly signature?: Buffer | undefined;
  readonly blob?: Buffer | undefined;
  readonly hashAlgo?: string | undefined;
}

export type PublicKeyDecision =
  | { readonly outcome: 'query-ok'; readonly key: AuthorizedKey }
  | { readonly outcome: 'accept'; readonly key: AuthorizedKey }
  | { readonly outcome: 'reject'; readonly reason: string };

/** The authorized key equal to the offered one; every key is compared, in constant time. */
export function findKey(
  keys: readonly AuthorizedKey[],
  algo: string,
  data: Buffer,
): AuthorizedKey | undefined {
  let found: AuthorizedKey | undefined;
  for (const key of keys) {
    const sameType = key.type === algo;
    const sameBytes = key.blob.length === data.length && timingSafeEqual(key.blob, data);
    if (sameType && sameBytes) found = key;
  }
  return found;
}

export function decidePublicKey(
  keys: readonly AuthorizedKey[],
  attempt: PublicKeyAttempt,
): PublicKeyDecision {
  const key = findKey(keys, attempt.algo, attempt.data);
  if (key === undefined) return { outcome: 'reject', reason: 'key not authorized' };
  if (attempt.signature === undefined) return { outcome: 'query-ok', key };
  if (attempt.blob === undefined) return { outcome: 'reject', reason: 'signature without data' };
  // OpenSSH has refused SHA-1 RSA signatures (`ssh-rsa`) by default since 8.8; so do we.
  if (key.type === 'ssh-rsa' && attempt.hashAlgo !== 'sha256' && attempt.hashAlgo !== 'sha512') {
    return { outcome: 'reject', reason: 'RSA signature with SHA-1' };
  }
  const valid = key.key.verify(attempt.blob, attempt.signature, attempt.hashAlgo);
  return valid === true
    ? { outcome: 'accept', key }
    : { outcome: 'reject', reason: 'bad signature' };
}
