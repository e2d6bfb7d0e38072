// D24: bearer API tokens are random, shown once, stored only as a hash.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const PREFIX = 'gpux_';

/** A new token: 32 random bytes, base64url, with a prefix that secret scanners can find. */
export function newApiToken(): string {
  return PREFIX + randomBytes(32).toString('base64url');
}

/**
 * What the database keeps. The token has 256 random bits, so a plain SHA-256
 * is enough (no salt or slow hash needed, unlike a password).
 */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  // The scheme name is case-insensitive (RFC 9110 §11.1).
  const m = /^Bearer +([\x21-\x7e]{1,512})$/i.exec(header.trim());
  return m?.[1];
}

/** Compares two secrets in time independent of where they differ. */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(hashToken(a), hashToken(b));
}
