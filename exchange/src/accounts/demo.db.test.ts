import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Database } from '../db/database.js';
import { migratedPostgres } from '../db/testing/fresh-database.js';
import type { FreshDatabase } from '../db/testing/fresh-database.js';
import { principalOf } from './accounts.js';
import { listClusters } from './clusters.js';
import { seedDemo } from './demo.js';

let fresh: FreshDatabase;
let db: Database;

beforeAll(async () => {
  fresh = await migratedPostgres();
  db = fresh.db;
});

afterAll(async () => {
  await fresh.drop();
});

describe('D34: demo data (the embedded database, or PostgreSQL with GPUX_DEMO=1)', () => {
  it('creates a buyer, a provider and its cluster once, and fresh tokens at every start', async () => {
    const first = await seedDemo(db);
    const second = await seedDemo(db);
    // Same accounts and cluster, new tokens.
    expect(second.buyerAccountId).toBe(first.buyerAccountId);
    expect(second.providerAccountId).toBe(first.providerAccountId);
    expect(second.clusterId).toBe(first.clusterId);
    expect(second.buyerToken).not.toBe(first.buyerToken);
    const clusters = await listClusters(db);
    expect(clusters).toHaveLength(1);
    expect(clusters[0]).toMatchObject({ gpuType: 'h100', zone: 'us-west-1' });
    expect(clusters[0]?.nodes).toHaveLength(4);
    // Only the newest tokens work.
    expect(await principalOf(db, first.buyerToken)).toBeUndefined();
    const buyer = await principalOf(db, second.buyerToken);
    expect(buyer?.accountId).toBe(second.buyerAccountId);
    expect([...(buyer?.scopes ?? [])].sort()).toEqual(['leases', 'read', 'trade']);
    const provider = await principalOf(db, second.providerToken);
    expect(provider?.scopes.has('provider')).toBe(true);
    // D17: buyer and provider are different parties.
    expect(provider?.organizationId).not.toBe(buyer?.organizationId);
  });
});
