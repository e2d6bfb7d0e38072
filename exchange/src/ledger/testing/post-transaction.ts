// Tests write ledger transactions the way the market does: through a change set.

import type { Queryable } from '../../db/database.js';
import { ChangeSet } from '../../market/change-set.js';
import type { LedgerTransaction } from '../ledger.js';

export async function postTransaction(q: Queryable, t: LedgerTransaction): Promise<void> {
  const changes = new ChangeSet();
  changes.post(t, Date.now());
  await changes.write(q);
}
