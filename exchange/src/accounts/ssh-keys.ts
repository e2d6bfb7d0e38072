// SSH public keys (D32): parsed and checked, stored with their OpenSSH
// SHA256 fingerprint.
//
// Parser: `ssh2`'s `utils.parseKey` (ssh2 1.17.0, pinned). The provider
// agent's SSH gateway is built on the same library and loads the keys a
// lease's account had with that same function, so a key accepted here
// is one the gateway can load; sshpk would be a second parser with its own
// idea of what a key is. parseKey alone is too lenient for an API input (it
// takes private keys, PuTTY and RFC 4716 files, DSA keys, certificates, and
// comments spanning lines), so the checks around it keep to one OpenSSH
// public key line of the types below, and node's crypto then loads the key
// material itself (a point off its curve, a malformed RSA key).

import { createHash, createPublicKey } from 'node:crypto';

import { GpuxError, fieldError, newId } from '@gpux/shared';
import type { FieldRule, ValidationError } from '@gpux/shared';
import ssh2 from 'ssh2';

import type { Queryable } from '../db/database.js';

/**
 * Key types the SSH gateway accepts: what ssh2 can verify, less DSA (1024-bit
 * and SHA-1 only; OpenSSH disabled it). Security-key kinds (`sk-…`) are not
 * here: ssh2 cannot parse or verify them, so the gateway could not use one.
 */
export const SSH_KEY_TYPES = [
  'ssh-ed25519',
  'ssh-rsa',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
] as const;
export type SshKeyType = (typeof SSH_KEY_TYPES)[number];

function isSshKeyType(x: string): x is SshKeyType {
  return (SSH_KEY_TYPES as readonly string[]).includes(x);
}

/** RSA keys shorter than this are refused: 1024 bits is within reach of a factoring effort. */
export const MIN_RSA_BITS = 2048;

export interface ParsedKey {
  readonly type: SshKeyType;
  /** `type base64`, without the comment. */
  readonly normalized: string;
  /** OpenSSH form: `SHA256:` + unpadded base64 of the blob's SHA-256. */
  readonly fingerprint: string;
}

/**
 * An OpenSSH public key line, `type base64 [comment]`. The blob must decode
 * to exactly the fields of its type and name the same type inside, so a
 * pasted private key, a truncated line or a relabelled blob is refused.
 */
export function parsePublicKey(line: string): ParsedKey {
  const bad = (why: string, rule: FieldRule = 'format'): ValidationError =>
    fieldError('public_key', rule, `public_key: ${why}`);
  const text = line.trim();
  if (/[\r\n]/.test(text)) throw bad('expected one line, "<type> <base64> [comment]"');
  const [type, data] = text.split(/\s+/);
  if (type === undefined || data === undefined) throw bad('expected "<type> <base64> [comment]"');
  if (!isSshKeyType(type)) {
    throw fieldError(
      'public_key',
      'enum',
      `public_key: key type ${type.slice(0, 40)} is not accepted (${SSH_KEY_TYPES.join(', ')})`,
      { allowed: SSH_KEY_TYPES },
    );
  }
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(data) || data.length % 4 !== 0) throw bad('not base64');
  // The comment plays no part, and ssh2 wants exactly one space after the type.
  const key = ssh2.utils.parseKey(`${type} ${data}`);
  if (key instanceof Error || key.isPrivateKey() || key.type !== type) {
    throw bad('key data is truncated or does not match its type');
  }
  // parseKey reads the fields it needs; the blob it rebuilds from them must be
  // the whole blob given (no trailing bytes, nothing re-encoded).
  const blob = Buffer.from(data, 'base64');
  if (!key.getPublicSSH().equals(blob))
    throw bad('key data is truncated or does not match its type');
  let material;
  try {
    material = createPublicKey(key.getPublicPEM());
  } catch {
    throw bad('the key data is not a valid key of its type');
  }
  if (type === 'ssh-rsa') {
    const bits = material.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < MIN_RSA_BITS) {
      throw fieldError(
        'public_key',
        'minimum',
        `public_key: an RSA key must have at least ${MIN_RSA_BITS} bits; this one has ${bits}`,
        { limit: MIN_RSA_BITS },
      );
    }
  }
  const fingerprint = `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
  return { type, normalized: `${type} ${blob.toString('base64')}`, fingerprint };
}

export interface SshKeyView {
  readonly sshKeyId: string;
  readonly name: string;
  readonly type: SshKeyType;
  readonly publicKey: string;
  readonly fingerprint: string;
  readonly createdAt: Date;
}

interface Row {
  id: string;
  name: string;
  /** Written from a parsed key only, so one of SSH_KEY_TYPES. */
  key_type: SshKeyType;
  public_key: string;
  fingerprint: string;
  created_at: Date;
}

function view(r: Row): SshKeyView {
  return {
    sshKeyId: r.id,
    name: r.name,
    type: r.key_type,
    publicKey: r.public_key,
    fingerprint: r.fingerprint,
    createdAt: r.created_at,
  };
}

export async function addSshKey(
  tx: Queryable,
  accountId: string,
  name: string,
  publicKey: string,
): Promise<SshKeyView> {
  const key = parsePublicKey(publicKey);
  const rows = await tx.query<Row>(
    `INSERT INTO ssh_keys (id, account_id, name, key_type, public_key, fingerprint)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (account_id, fingerprint) WHERE deleted_at IS NULL DO NOTHING
     RETURNING id, name, key_type, public_key, fingerprint, created_at`,
    [newId('key_'), accountId, name, key.type, key.normalized, key.fingerprint],
  );
  const [row] = rows;
  if (row === undefined) {
    // Issue 24: a program that registers its key again learns the key's id.
    const [existing] = await tx.query<{ id: string }>(
      `SELECT id FROM ssh_keys WHERE account_id = $1 AND fingerprint = $2 AND deleted_at IS NULL`,
      [accountId, key.fingerprint],
    );
    throw new GpuxError(
      'ssh_key_exists',
      `this public key (${key.fingerprint}) is already registered as ${existing?.id ?? 'another key'}`,
      {
        details: {
          field: 'public_key',
          fingerprint: key.fingerprint,
          ...(existing === undefined ? {} : { ssh_key_id: existing.id }),
        },
      },
    );
  }
  return view(row);
}

/** The account's live keys, newest first (D21). */
export async function listSshKeys(q: Queryable, accountId: string): Promise<SshKeyView[]> {
  const rows = await q.query<Row>(
    `SELECT id, name, key_type, public_key, fingerprint, created_at FROM ssh_keys
      WHERE account_id = $1 AND deleted_at IS NULL ORDER BY created_at DESC, id DESC`,
    [accountId],
  );
  return rows.map(view);
}

/** D24: another account's key is not_found, never forbidden. */
export async function deleteSshKey(q: Queryable, accountId: string, id: string): Promise<void> {
  const rows = await q.query(
    `UPDATE ssh_keys SET deleted_at = now()
      WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL RETURNING id`,
    [id, accountId],
  );
  if (rows.length === 0) throw new GpuxError('not_found', `no SSH key ${id}`);
}
