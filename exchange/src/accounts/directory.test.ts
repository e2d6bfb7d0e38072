// The directory's caches: a token's principal for 10 s, a provider's
// clusters until one is added or a lookup misses (docs/persistence.md).

import { describe, expect, it } from 'vitest';

import { hashToken } from '../auth/tokens.js';
import type { Queryable } from '../db/database.js';
import { Directory } from './directory.js';

/** A database that answers the two lookups from in-memory tables and counts queries. */
function fakeDb(): {
  db: Queryable;
  tokens: Map<string, string>;
  clusters: { id: string; owner: string }[];
  queries: () => number;
} {
  const tokens = new Map<string, string>();
  const clusters: { id: string; owner: string }[] = [];
  let n = 0;
  const db: Queryable = {
    query<Row>(sql: string, params?: readonly unknown[]): Promise<Row[]> {
      n++;
      if (sql.includes('FROM api_tokens')) {
        // principalOf() passes the token's hash; the fake keys by the hash's hex.
        const hash = (params?.[0] as Buffer).toString('hex');
        const acc = tokens.get(hash);
        return Promise.resolve(
          (acc === undefined
            ? []
            : [
                {
                  account_id: acc,
                  organization_id: 'org_x',
                  scopes: ['read'],
                  credit_limit_cents: null,
                },
              ]) as Row[],
        );
      }
      return Promise.resolve(
        clusters
          .filter((c) => c.owner === params?.[0])
          .map((c) => ({ id: c.id, gpu_type: 'h100', zone: 'us-west-1' })) as Row[],
      );
    },
    exec: () => Promise.resolve(),
  };
  return { db, tokens, clusters, queries: () => n };
}

describe('Directory', () => {
  it('keeps a principal for the TTL, then reads it again; unknown tokens are never kept', async () => {
    const f = fakeDb();
    let now = 0;
    const d = new Directory(f.db, 10_000, 100, () => now);
    f.tokens.set(hashToken('tok-a').toString('hex'), 'acc_a');
    expect((await d.principal('tok-a'))?.accountId).toBe('acc_a');
    expect((await d.principal('tok-a'))?.accountId).toBe('acc_a');
    expect(f.queries()).toBe(1);
    // Revoked in the database: still served until the TTL runs out, not after.
    f.tokens.clear();
    now = 9_999;
    expect(await d.principal('tok-a')).toBeDefined();
    now = 10_000;
    expect(await d.principal('tok-a')).toBeUndefined();
    expect(await d.principal('tok-a')).toBeUndefined();
    expect(f.queries()).toBe(3);
  });

  it('keeps a provider`s clusters until told one was added, and reads fresh when asked', async () => {
    const f = fakeDb();
    const d = new Directory(f.db);
    f.clusters.push({ id: 'cls_1', owner: 'acc_p' });
    expect((await d.clustersOf('acc_p')).map((c) => c.id)).toEqual(['cls_1']);
    f.clusters.push({ id: 'cls_2', owner: 'acc_p' });
    expect((await d.clustersOf('acc_p')).map((c) => c.id)).toEqual(['cls_1']);
    expect((await d.clustersOf('acc_p', true)).map((c) => c.id)).toEqual(['cls_1', 'cls_2']);
    f.clusters.push({ id: 'cls_3', owner: 'acc_p' });
    d.forgetClusters('acc_p');
    expect((await d.clustersOf('acc_p')).map((c) => c.id)).toEqual(['cls_1', 'cls_2', 'cls_3']);
  });
});
