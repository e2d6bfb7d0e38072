// SSH public keys (D32): parsed and checked, stored with their OpenSSH
// SHA256 fingerprint.

import { createHash } from 'node:crypto';

import { GpuxError, newId } from '@gpux/shared';

import type { Queryable } from '../db/database.js';

/**
 * Key types the SSH gateway accepts (DSA and others are refused), with the
 * number of SSH string fields their blob holds, the type name included
 * (RFC 4253 6.6, RFC 5656, RFC 8709, OpenSSH PROTOCOL.u2f).
 */
const FIELDS: Readonly<Record<string, number>> = {
  'ssh-ed25519': 2,
  'ssh-rsa': 3,
  'ecdsa-sha2-nistp256': 3,
  'ecdsa-sha2-nistp384': 3,
  'ecdsa-sha2-nistp521': 3,
  'sk-ssh-ed25519@openssh.com': 3,
  'sk-ecdsa-sha2-nistp256@openssh.com': 4,
};
export const SSH_KEY_TYPES = Object.keys(FIELDS);

/** The blob's SSH string fields, or undefined when they do not fill it exactly. */
function fieldsOf(blob: Buffer): Buffer[] | undefined {
  const fields: Buffer[] = [];
  let at = 0;
  while (at < blob.length) {
    if (at + 4 > blob.length) return undefined;
    const length = blob.readUInt32BE(at);
    if (at + 4 + length > blob.length) return undefined;
    fields.push(blob.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  return fields;
}

export interface ParsedKey {
  readonly type: string;
  /** `type base64`, without the comment. */
  readonly normalized: string;
  /** OpenSSH form: `SHA256:` + unpadded base64 of the blob's SHA-256. */
  readonly fingerprint: string;
}

/**
 * An OpenSSH public key line, `type base64 [comment]`. The blob must decode
 * and name the same type inside (its first field), so a pasted private key,
 * a truncated line or a relabelled blob is refused.
 */
export function parsePublicKey(line: string): ParsedKey {
  const bad = (why: string): GpuxError => new GpuxError('invalid_request', `public_key: ${why}`);
  const parts = line.trim().split(/\s+/);
  const [type, data] = parts;
  if (type === undefined || data === undefined) throw bad('expected "<type> <base64> [comment]"');
  const expected = FIELDS[type];
  if (expected === undefined) {
    throw bad(`key type ${type.slice(0, 40)} is not accepted (${SSH_KEY_TYPES.join(', ')})`);
  }
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(data) || data.length % 4 !== 0) throw bad('not base64');
  const blob = Buffer.from(data, 'base64');
  const fields = fieldsOf(blob);
  if (fields?.length !== expected || fields[0]?.toString('latin1') !== type) {
    throw bad('key data is truncated or does not match its type');
  }
  if (type.includes('ed25519') && fields[1]?.length !== 32) throw bad('an ed25519 key is 32 bytes');
  const fingerprint = `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
  return { type, normalized: `${type} ${data}`, fingerprint };
}

export interface SshKeyView {
  readonly sshKeyId: string;
  readonly name: string;
  readonly type: string;
  readonly publicKey: string;
  readonly fingerprint: string;
  readonly createdAt: Date;
}

interface Row {
  id: string;
  name: string;
  key_type: string;
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
    throw new GpuxError('invalid_request', `public_key: ${key.fingerprint} is already registered`);
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
