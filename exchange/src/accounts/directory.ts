// Who is calling and what they own, read on every order: the principal of a
// token (D24) and a provider's clusters (D31). Both change rarely and are
// read on every request, so they are kept in memory for a short while
// instead of costing a database round trip each time (docs/persistence.md).
//
// - A token's principal is kept for `ttlMs` (10 s) after it was read: a token
//   revoked or an account changed in the database takes effect within that
//   time. Unknown tokens are not remembered (nothing to fill memory with).
//   The operators' API drops an account's or a token's principals on the
//   spot when it suspends, reinstates or revokes (forgetAccount, forgetToken).
// - A provider's clusters are kept until one is added through the admin API,
//   or a lookup misses: clusters are never deleted or moved (D31), and one
//   that is not in the list (added by another process) is looked up again
//   before the caller hears it does not exist.

import type { Queryable } from '../db/database.js';
import { hashToken } from '../auth/tokens.js';
import type { Principal } from './accounts.js';
import { principalOf, principalsOf } from './accounts.js';

export interface ClusterRef {
  readonly id: string;
  readonly gpu_type: string;
  readonly zone: string;
}

interface Cached<T> {
  readonly value: T;
  readonly until: number;
}

/**
 * How often a process whose callers keep coming back (the agents' service)
 * renews the principals it keeps: with the 10 s while, a suspension or a
 * revocation reaches it within 10 s (docs/api/admin.md).
 */
export const RENEW_EVERY_MS = 5_000;

/** Tokens renewed by one statement. */
const RENEW_CHUNK = 500;

export class Directory {
  private readonly principals = new Map<string, Cached<Principal>>();
  private readonly clusters = new Map<string, readonly ClusterRef[]>();
  /**
   * Raised by every forgetAccount / forgetToken: a principal read from the
   * database before one of them (it may predate the suspension or
   * revocation) is answered but not kept.
   */
  private forgets = 0;

  constructor(
    private readonly db: Queryable,
    private readonly ttlMs = 10_000,
    private readonly maxEntries = 100_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The account of a live token, or undefined (401). */
  async principal(token: string): Promise<Principal | undefined> {
    const t = this.now();
    const hit = this.principals.get(token);
    if (hit !== undefined && hit.until > t) return hit.value;
    const forgets = this.forgets;
    const p = await principalOf(this.db, token);
    if (p === undefined) {
      this.principals.delete(token);
      return undefined;
    }
    if (forgets !== this.forgets) return p;
    if (this.principals.size >= this.maxEntries) this.principals.clear();
    this.principals.set(token, { value: p, until: t + this.ttlMs });
    return p;
  }

  /**
   * Read every principal kept again, in one statement, and keep each for
   * another `ttlMs`; a token revoked meanwhile is forgotten. Run every few
   * seconds where many callers keep coming back (the agents' service: a
   * heartbeat of every agent every few seconds), it spares a lookup per
   * caller per `ttlMs`, and a revocation still takes effect within it.
   */
  async renew(): Promise<void> {
    // Those past half their while, a few hundred a statement: each
    // statement and what it returns is handled between other work.
    const due = [...this.principals]
      .filter(([, c]) => c.until - this.now() < this.ttlMs / 2)
      .map(([token]) => token);
    for (let i = 0; i < due.length; i += RENEW_CHUNK) {
      const tokens = due.slice(i, i + RENEW_CHUNK);
      const t = this.now();
      const forgets = this.forgets;
      const hashes = tokens.map((token) => hashToken(token));
      const live = await principalsOf(this.db, hashes);
      // Read before a forget: what it dropped is read again on next use.
      if (forgets !== this.forgets) continue;
      tokens.forEach((token, k) => {
        const p = live.get(hashes[k]?.toString('hex') ?? '');
        if (p === undefined) this.principals.delete(token);
        else this.principals.set(token, { value: p, until: t + this.ttlMs });
      });
    }
  }

  /**
   * Drop every kept principal of the account at once: it was suspended or
   * reinstated, or its credit limit changed (the operators' API). The next
   * request of any of its tokens reads the database.
   */
  forgetAccount(accountId: string): void {
    this.forgets++;
    for (const [token, c] of this.principals) {
      if (c.value.accountId === accountId) this.principals.delete(token);
    }
  }

  /** Drop the kept principal of a token at once: it was revoked. */
  forgetToken(tokenId: string): void {
    this.forgets++;
    for (const [token, c] of this.principals) {
      if (c.value.tokenId === tokenId) this.principals.delete(token);
    }
  }

  /** A cluster was added to the account (POST /v1/admin/clusters). */
  forgetClusters(accountId: string): void {
    this.clusters.delete(accountId);
  }

  /**
   * The clusters of a provider account, oldest first. With `fresh`, read
   * from the database (a caller whose cluster is missing asks again so).
   */
  async clustersOf(accountId: string, fresh = false): Promise<readonly ClusterRef[]> {
    const hit = fresh ? undefined : this.clusters.get(accountId);
    if (hit !== undefined) return hit;
    const rows = await this.db.query<ClusterRef>(
      'SELECT id, gpu_type, zone FROM clusters WHERE provider_account_id = $1 ORDER BY created_at, id',
      [accountId],
    );
    if (this.clusters.size >= this.maxEntries) this.clusters.clear();
    this.clusters.set(accountId, rows);
    return rows;
  }
}
