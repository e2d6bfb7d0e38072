// D28 at start: the secret keys must open what is stored. A GPUX_SECRET_KEY
// that opens none of the stored kubeconfigs is a wrong key (a rotation that
// dropped the old key too early, another deployment's key): the exchange
// refuses to start, with one line, instead of answering 500 on every
// kubeconfig later (docs/operations.md, "Rotating the secret key").

import type { Queryable } from '../db/database.js';
import type { SecretBox } from './secret-box.js';

/** The newest kubeconfigs tried at start. */
const SAMPLE = 20;

export class SecretKeyError extends Error {
  override readonly name = 'SecretKeyError';
}

/** What the sample showed: how many opened, and how many of those need re-sealing. */
export interface KeyCheck {
  readonly tried: number;
  readonly opened: number;
  readonly underOlderKey: number;
}

export async function checkSecretKeys(db: Queryable, box: SecretBox): Promise<KeyCheck> {
  const [table] = await db.query<{ exists: boolean }>(
    "SELECT to_regclass('lease_access') IS NOT NULL AS exists",
  );
  if (table?.exists !== true) return { tried: 0, opened: 0, underOlderKey: 0 };
  const rows = await db.query<{ lease_id: string; kubeconfig_sealed: Uint8Array }>(
    `SELECT lease_id, kubeconfig_sealed FROM lease_access
      WHERE kubeconfig_sealed IS NOT NULL ORDER BY reported_ms DESC LIMIT ${SAMPLE}`,
  );
  let opened = 0;
  let underOlderKey = 0;
  for (const r of rows) {
    try {
      if (!box.opened(r.kubeconfig_sealed, r.lease_id).newest) underOlderKey++;
      opened++;
    } catch {
      // counted below: a wrong key opens none
    }
  }
  if (rows.length > 0 && opened === 0) {
    throw new SecretKeyError(
      `refusing to start: GPUX_SECRET_KEY opens none of the ${rows.length} newest stored kubeconfigs; ` +
        'it is not the key they were sealed with. While rotating, give the new key first and the old one after it (GPUX_SECRET_KEY=new,old), then run `gpux rekey`.',
    );
  }
  return { tried: rows.length, opened, underOlderKey };
}
