// D28 key rotation: every stored kubeconfig sealed under an older key of
// GPUX_SECRET_KEY is opened and sealed again under the newest, so that the
// older key can then be dropped (docs/operations.md, "Rotating the secret
// key"). Safe beside running exchanges: each row is replaced only if it is
// still the ciphertext that was read (an agent's new report wins).

import type { Queryable } from '../db/database.js';
import type { SecretBox } from './secret-box.js';

const BATCH = 500;

export interface Rekeyed {
  /** Sealed again under the newest key now. */
  readonly resealed: number;
  /** Sealed under the newest key already. */
  readonly current: number;
  /** Opened under none of the keys: dropping the old key would lose them. */
  readonly unreadable: readonly string[];
}

export async function rekey(db: Queryable, box: SecretBox): Promise<Rekeyed> {
  let resealed = 0;
  let current = 0;
  const unreadable: string[] = [];
  let after = '';
  for (;;) {
    const rows = await db.query<{ lease_id: string; kubeconfig_sealed: Uint8Array }>(
      `SELECT lease_id, kubeconfig_sealed FROM lease_access
        WHERE kubeconfig_sealed IS NOT NULL AND lease_id > $1
        ORDER BY lease_id LIMIT ${BATCH}`,
      [after],
    );
    for (const r of rows) {
      let opened: { plaintext: string; newest: boolean };
      try {
        opened = box.opened(r.kubeconfig_sealed, r.lease_id);
      } catch {
        unreadable.push(r.lease_id);
        continue;
      }
      if (opened.newest) {
        current++;
        continue;
      }
      const replaced = await db.query(
        `UPDATE lease_access SET kubeconfig_sealed = $3
          WHERE lease_id = $1 AND kubeconfig_sealed = $2 RETURNING 1`,
        [r.lease_id, r.kubeconfig_sealed, box.seal(opened.plaintext, r.lease_id)],
      );
      // Not replaced: a new report came meanwhile, sealed by a running exchange.
      if (replaced.length > 0) resealed++;
      else current++;
    }
    const last = rows[rows.length - 1];
    if (last === undefined || rows.length < BATCH) break;
    after = last.lease_id;
  }
  return { resealed, current, unreadable };
}
