// Demo data for a first look (D34): a buyer and a provider with one cluster.
// Created only on the embedded database or with GPUX_DEMO=1, never on an
// empty production database. Tokens are shown once and stored as hashes, so
// each start revokes the demo accounts' old tokens and prints new ones.

import { newId } from '@gpux/shared';
import type { TokenScope } from '@gpux/shared';

import { hashToken, newApiToken } from '../auth/tokens.js';
import type { Database, Queryable } from '../db/database.js';
import { createAccount } from './accounts.js';
import { createCluster } from './clusters.js';

export const DEMO_BUYER = { name: 'demo-buyer', organization: 'demo-buyers' } as const;
export const DEMO_PROVIDER = { name: 'demo-provider', organization: 'demo-provider' } as const;
const BUYER_SCOPES: readonly TokenScope[] = ['trade', 'read', 'leases'];
const PROVIDER_SCOPES: readonly TokenScope[] = ['provider', 'trade', 'read', 'leases'];
const DEMO_HOSTS = ['demo-gpu-1', 'demo-gpu-2', 'demo-gpu-3', 'demo-gpu-4'];

export interface DemoTokens {
  readonly buyerAccountId: string;
  readonly buyerToken: string;
  readonly providerAccountId: string;
  readonly providerToken: string;
  readonly clusterId: string;
}

async function accountNamed(
  tx: Queryable,
  name: string,
  organization: string,
): Promise<string | undefined> {
  const [row] = await tx.query<{ id: string }>(
    `SELECT a.id FROM accounts a JOIN organizations o ON o.id = a.organization_id
      WHERE a.name = $1 AND o.name = $2 ORDER BY a.created_at LIMIT 1`,
    [name, organization],
  );
  return row?.id;
}

/** A fresh token for an existing account; its earlier tokens stop working. */
async function rotateToken(
  tx: Queryable,
  accountId: string,
  scopes: readonly TokenScope[],
): Promise<string> {
  await tx.query(
    'UPDATE api_tokens SET revoked_at = now() WHERE account_id = $1 AND revoked_at IS NULL',
    [accountId],
  );
  const token = newApiToken();
  await tx.query(
    'INSERT INTO api_tokens (id, account_id, token_hash, scopes) VALUES ($1, $2, $3, $4)',
    [newId('tok_'), accountId, hashToken(token), scopes],
  );
  return token;
}

async function ensureAccount(
  tx: Queryable,
  who: { name: string; organization: string },
  scopes: readonly TokenScope[],
): Promise<{ accountId: string; token: string }> {
  const existing = await accountNamed(tx, who.name, who.organization);
  if (existing !== undefined) {
    return { accountId: existing, token: await rotateToken(tx, existing, scopes) };
  }
  const created = await createAccount(tx, { ...who, scopes });
  return { accountId: created.accountId, token: created.token };
}

/** Create the demo data if missing (idempotent) and mint fresh demo tokens. */
export async function seedDemo(db: Database): Promise<DemoTokens> {
  return db.transaction(async (tx) => {
    const buyer = await ensureAccount(tx, DEMO_BUYER, BUYER_SCOPES);
    const provider = await ensureAccount(tx, DEMO_PROVIDER, PROVIDER_SCOPES);
    const [cluster] = await tx.query<{ id: string }>(
      'SELECT id FROM clusters WHERE provider_account_id = $1 ORDER BY created_at LIMIT 1',
      [provider.accountId],
    );
    const clusterId =
      cluster?.id ??
      (
        await createCluster(tx, {
          providerAccountId: provider.accountId,
          gpuType: 'h100',
          zone: 'us-west-1',
          hostnames: DEMO_HOSTS,
        })
      ).clusterId;
    return {
      buyerAccountId: buyer.accountId,
      buyerToken: buyer.token,
      providerAccountId: provider.accountId,
      providerToken: provider.token,
      clusterId,
    };
  });
}
