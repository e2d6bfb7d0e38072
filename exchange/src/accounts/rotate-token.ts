// POST /v1/account/token/rotate (issue 24): a caller replaces its own API
// token. The new token has the old one's scopes; the old one is revoked in
// the same transaction, and the route drops its kept principal at once
// (Directory.forgetToken), so the old token is refused from the next request
// on, not after the directory's while.

import { GpuxError, newId } from '@gpux/shared';
import type { TokenScope } from '@gpux/shared';

import { hashToken, newApiToken } from '../auth/tokens.js';
import type { Queryable } from '../db/database.js';

export interface RotatedToken {
  readonly tokenId: string;
  readonly token: string;
  readonly scopes: readonly TokenScope[];
  readonly createdAt: Date;
  readonly replacedTokenId: string;
}

export async function rotateToken(
  tx: Queryable,
  accountId: string,
  tokenId: string,
): Promise<RotatedToken> {
  // The old token's row, locked: two rotations of one token cannot both win.
  const [old] = await tx.query<{ scopes: TokenScope[] }>(
    `UPDATE api_tokens SET revoked_at = now()
      WHERE id = $1 AND account_id = $2 AND revoked_at IS NULL RETURNING scopes`,
    [tokenId, accountId],
  );
  if (old === undefined) throw new GpuxError('unauthorized', 'unknown or revoked API token');
  const token = newApiToken();
  const [row] = await tx.query<{ id: string; created_at: Date }>(
    `INSERT INTO api_tokens (id, account_id, token_hash, scopes) VALUES ($1, $2, $3, $4)
     RETURNING id, created_at`,
    [newId('tok_'), accountId, hashToken(token), old.scopes],
  );
  if (row === undefined) throw new Error('INSERT … RETURNING returned nothing');
  return {
    tokenId: row.id,
    token,
    scopes: old.scopes,
    createdAt: row.created_at,
    replacedTokenId: tokenId,
  };
}
