// A lease kubeconfig's token through its life (D28): asked for with
// TokenRequest for the lease's ServiceAccount, bound to the lease's anchor
// Secret and expiring no later than the lease; kept in the agent's state
// directory (0600, never in the cluster) so provisioning again gives the
// same kubeconfig; and, when the API server caps its life before the lease
// ends, due again at 80% of that life. The agent's work queue provisions the
// lease again at `refreshAtMs` (LeaseAccess), which asks for the new token
// here and reports the new kubeconfig.
//
//   <stateDir>/kubernetes/tokens/<lease id>.json

import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

import type { AuthenticationV1TokenRequest } from '@kubernetes/client-node';

import type { Logger } from '../../logger.js';
import { UnreadableRecordError, readJsonFile, writeFileAtomic } from '../../state/atomic-file.js';
import type { LeaseSpec } from '../lease-spec.js';
import type { KubeClient } from './kube-client.js';
import { NAMES, serviceAccountName } from './objects.js';

/** Real API servers refuse a token life under 10 minutes (TokenRequest validation). */
export const MIN_TOKEN_SECONDS = 600;

export interface StoredToken {
  readonly token: string;
  readonly issuedMs: number;
  readonly expiresMs: number;
  /** When a new one is asked for: never (Infinity) if it lives until the lease ends. */
  readonly refreshAtMs: number;
  /** The anchor Secret it is bound to: a new Secret (another uid) means a dead token. */
  readonly secretUid: string;
}

/**
 * When to ask for a new token: never, if this one lives until the lease
 * ends; otherwise once 80% of its life has passed.
 */
export function refreshTime(issuedMs: number, expiresMs: number, leaseEndMs: number): number {
  if (expiresMs >= leaseEndMs) return Number.POSITIVE_INFINITY;
  return issuedMs + Math.floor((expiresMs - issuedMs) * 0.8);
}

/** Seconds asked for: until the lease ends (D28), at least the API server's minimum. */
export function tokenSeconds(nowMs: number, leaseEndMs: number): number {
  return Math.max(MIN_TOKEN_SECONDS, Math.floor((leaseEndMs - nowMs) / 1000));
}

export interface LeaseTokensOptions {
  readonly kube: KubeClient;
  /** Tokens are kept under `<stateDir>/kubernetes/tokens/`. */
  readonly stateDir: string;
  readonly logger: Logger;
  readonly now: () => number;
}

export class LeaseTokens {
  private readonly dir: string;

  constructor(private readonly o: LeaseTokensOptions) {
    this.dir = join(o.stateDir, 'kubernetes', 'tokens');
  }

  /** The stored token while it is still the one to use; otherwise a new one (TokenRequest). */
  async current(
    lease: LeaseSpec,
    secretUid: string,
  ): Promise<{ token: StoredToken; minted: boolean }> {
    const stored = await this.stored(lease.leaseId);
    const now = this.o.now();
    if (stored !== undefined && stored.secretUid === secretUid && now < stored.refreshAtMs) {
      return { token: stored, minted: false };
    }
    const request: AuthenticationV1TokenRequest = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: [],
        expirationSeconds: tokenSeconds(now, lease.endMs),
        boundObjectRef: {
          apiVersion: 'v1',
          kind: 'Secret',
          name: NAMES.anchorSecret,
          uid: secretUid,
        },
      },
    };
    const res = await this.o.kube.requestToken(lease.namespace, serviceAccountName(lease), request);
    const value = res.status?.token;
    if (value === undefined || value === '') {
      throw new Error('TokenRequest answered without a token');
    }
    // Real servers cap the life (and may extend short ones): what counts is what they answered.
    const exp = res.status?.expirationTimestamp;
    const expiresMs = exp === undefined ? now + MIN_TOKEN_SECONDS * 1000 : new Date(exp).getTime();
    const token: StoredToken = {
      token: value,
      issuedMs: now,
      expiresMs,
      refreshAtMs: refreshTime(now, expiresMs, lease.endMs),
      secretUid,
    };
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(
      this.pathOf(lease.leaseId),
      JSON.stringify({
        ...token,
        refreshAtMs: Number.isFinite(token.refreshAtMs) ? token.refreshAtMs : null,
      }),
    );
    if (expiresMs < lease.endMs) {
      this.o.logger.info(
        { leaseId: lease.leaseId, expiresAt: new Date(expiresMs).toISOString() },
        'lease token ends before the lease: it will be refreshed',
      );
    }
    return { token, minted: true };
  }

  /**
   * The token kept for the lease; undefined when there is none, or when its
   * file is unreadable (logged: a new token is asked for at the next
   * provisioning and replaces it).
   */
  async stored(leaseId: string): Promise<StoredToken | undefined> {
    try {
      return parseToken(await readJsonFile(this.pathOf(leaseId)), leaseId);
    } catch (err) {
      if (!(err instanceof SyntaxError || err instanceof UnreadableRecordError)) throw err;
      this.o.logger.warn({ leaseId, err }, 'lease token file unreadable; a new token is asked for');
      return undefined;
    }
  }

  /** The lease is revoked: its token is of no use any more (it died with its Secret). */
  async forget(leaseId: string): Promise<void> {
    await rm(this.pathOf(leaseId), { force: true });
  }

  private pathOf(leaseId: string): string {
    return join(this.dir, `${leaseId}.json`);
  }
}

function parseToken(raw: unknown, leaseId: string): StoredToken | undefined {
  if (raw === undefined) return undefined;
  const t = raw as Partial<Omit<StoredToken, 'refreshAtMs'>> & { refreshAtMs?: number | null };
  if (
    t === null ||
    typeof t !== 'object' ||
    typeof t.token !== 'string' ||
    typeof t.issuedMs !== 'number' ||
    typeof t.expiresMs !== 'number' ||
    typeof t.secretUid !== 'string'
  ) {
    throw new UnreadableRecordError(`the token file of ${leaseId} is not a token`);
  }
  return {
    token: t.token,
    issuedMs: t.issuedMs,
    expiresMs: t.expiresMs,
    refreshAtMs: typeof t.refreshAtMs === 'number' ? t.refreshAtMs : Number.POSITIVE_INFINITY,
    secretUid: t.secretUid,
  };
}
