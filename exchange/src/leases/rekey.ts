// D28 key rotation: every stored kubeconfig sealed under an older key of
// GPUX_SECRET_KEY is opened and sealed again under the newest, so that the
// older key can then be dropped (docs/operations.md, "Rotating the secret
// key"). Safe beside running exchanges: each row is replaced only if it is
// still the ciphertext that was read (an agent's new report wins). Webhook
// signing secrets (issue 22) likewise.

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

/** A column of sealed secrets, each sealed for its row's key (the box's additional data). */
interface SealedColumn {
  readonly table: string;
  readonly key: string;
  readonly column: string;
  /** Stored form ↔ bytes (bytea as is; text as base64). */
  readonly bytes: (stored: unknown) => Uint8Array;
  readonly stored: (sealed: Buffer) => unknown;
}

const KUBECONFIGS: SealedColumn = {
  table: 'lease_access',
  key: 'lease_id',
  column: 'kubeconfig_sealed',
  bytes: (s) => s as Uint8Array,
  stored: (b) => b,
};

/** Webhook endpoints' signing secrets (webhooks/endpoints.ts), base64 text. */
const WEBHOOK_SECRETS: SealedColumn = {
  table: 'webhook_endpoints',
  key: 'id',
  column: 'secret_sealed',
  bytes: (s) => Buffer.from(s as string, 'base64'),
  stored: (b) => b.toString('base64'),
};

export function rekey(db: Queryable, box: SecretBox): Promise<Rekeyed> {
  return reseal(db, box, KUBECONFIGS);
}

/** Issue 22: every webhook secret sealed again under the newest key, as rekey does kubeconfigs. */
export function rekeyWebhooks(db: Queryable, box: SecretBox): Promise<Rekeyed> {
  return reseal(db, box, WEBHOOK_SECRETS);
}

async function reseal(db: Queryable, box: SecretBox, c: SealedColumn): Promise<Rekeyed> {
  let resealed = 0;
  let current = 0;
  const unreadable: string[] = [];
  let after = '';
  for (;;) {
    const rows = await db.query<{ id: string; sealed: unknown }>(
      `SELECT ${c.key} AS id, ${c.column} AS sealed FROM ${c.table}
        WHERE ${c.column} IS NOT NULL AND ${c.key} > $1
        ORDER BY ${c.key} LIMIT ${BATCH}`,
      [after],
    );
    for (const r of rows) {
      let opened: { plaintext: string; newest: boolean };
      try {
        opened = box.opened(c.bytes(r.sealed), r.id);
      } catch {
        unreadable.push(r.id);
        continue;
      }
      if (opened.newest) {
        current++;
        continue;
      }
      const replaced = await db.query(
        `UPDATE ${c.table} SET ${c.column} = $3
          WHERE ${c.key} = $1 AND ${c.column} = $2 RETURNING 1`,
        [r.id, r.sealed, c.stored(box.seal(opened.plaintext, r.id))],
      );
      // Not replaced: a new report came meanwhile, sealed by a running exchange.
      if (replaced.length > 0) resealed++;
      else current++;
    }
    const last = rows[rows.length - 1];
    if (last === undefined || rows.length < BATCH) break;
    after = last.id;
  }
  return { resealed, current, unreadable };
}
