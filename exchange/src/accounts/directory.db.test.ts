// The directory's renewal (directory.ts): every principal it keeps read
// again in one statement, on both engines; a token revoked meanwhile is
// forgotten, the others kept.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Database } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { OPEN_TIMEOUT_MS, TEST_ENGINES } from '../db/testing/fresh-database.js';
import { createAccount } from './accounts.js';
import { Directory } from './directory.js';

describe.each(TEST_ENGINES)('Directory.renew on %s', (_name, open) => {
  let db: Database;
  let done: () => Promise<void>;

  beforeAll(async () => {
    ({ db, done } = await open());
    await migrate(db);
  }, OPEN_TIMEOUT_MS);

  afterAll(async () => {
    await done();
  });

  it('keeps the live tokens for another while in one statement and forgets a revoked one', async () => {
    const a = await createAccount(db, { name: 'a', organization: 'org-a', scopes: ['provider'] });
    const b = await createAccount(db, { name: 'b', organization: 'org-b', scopes: ['read'] });
    let t = 0;
    const directory = new Directory(db, 10_000, 100, () => t);
    expect((await directory.principal(a.token))?.accountId).toBe(a.accountId);
    expect((await directory.principal(b.token))?.scopes).toEqual(new Set(['read']));

    await db.query('UPDATE api_tokens SET revoked_at = now() WHERE account_id = $1', [b.accountId]);
    let statements = 0;
    const counting: Database = {
      ...db,
      query: (sql, params, options) => {
        statements++;
        return db.query(sql, params, options);
      },
    };
    const renewing = new Directory(counting, 10_000, 100, () => t);
    await renewing.principal(a.token);
    await renewing.principal(b.token).then((p) => expect(p).toBeUndefined());
    await directory.renew();
    t = 9_000;
    // Renewed at 0: kept until 10 s, with no lookup of its own.
    await renewing.renew();
    expect(statements).toBe(3);
    t = 15_000;
    expect((await renewing.principal(a.token))?.accountId).toBe(a.accountId);
    expect(statements).toBe(3);
    // The revoked token is gone from the first directory at its renewal.
    expect(await directory.principal(b.token)).toBeUndefined();
  });

  it('forgetAccount and forgetToken drop kept principals at once; a lookup begun before is not kept', async () => {
    const a = await createAccount(db, { name: 'fa', organization: 'org-fa', scopes: ['read'] });
    const b = await createAccount(db, { name: 'fb', organization: 'org-fb', scopes: ['read'] });
    let statements = 0;
    const counting: Database = {
      ...db,
      query: (sql, params, options) => {
        statements++;
        return db.query(sql, params, options);
      },
    };
    const directory = new Directory(counting, 10_000, 100, () => 0);
    await directory.principal(a.token);
    await directory.principal(b.token);
    expect(statements).toBe(2);
    await db.query('UPDATE accounts SET suspended_at = now() WHERE id = $1', [a.accountId]);
    expect((await directory.principal(a.token))?.suspended).toBe(false); // kept
    directory.forgetAccount(a.accountId);
    expect((await directory.principal(a.token))?.suspended).toBe(true);
    expect(statements).toBe(3);
    // b was not dropped.
    await directory.principal(b.token);
    expect(statements).toBe(3);

    await db.query('UPDATE api_tokens SET revoked_at = now() WHERE id = $1', [b.tokenId]);
    directory.forgetToken(b.tokenId);
    expect(await directory.principal(b.token)).toBeUndefined();

    // A lookup that read the database before a forget is answered, not kept.
    const c = await createAccount(db, { name: 'fc', organization: 'org-fc', scopes: ['read'] });
    const pending = directory.principal(c.token);
    directory.forgetAccount(c.accountId);
    await pending;
    const before = statements;
    await directory.principal(c.token);
    expect(statements).toBe(before + 1);
  });
});
