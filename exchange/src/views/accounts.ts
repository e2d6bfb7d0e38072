// The JSON of accounts (D31, D33), their ledger rows, the platform's own
// account, provider clusters (D31) and SSH keys (D32), and their schemas.
// Money in dollars rounded to cents (D1).

import { GPUS_PER_NODE, GPU_TYPES, TOKEN_SCOPES, ZONES, formatDollars } from '@gpux/shared';
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

import type { AccountView, CreatedAccount } from '../accounts/accounts.js';
import type { ClusterView } from '../accounts/clusters.js';
import { SSH_KEY_TYPES } from '../accounts/ssh-keys.js';
import type { SshKeyView } from '../accounts/ssh-keys.js';
import { Dollars, Nullable, PAGE_FIELDS, StringEnum, Timestamp } from '../http/schema.js';
import { ENTRY_KINDS, TRANSACTION_KINDS } from '../ledger/ledger.js';
import { CORDONED_BY } from '../market/cordon.js';
import type { EntryView } from '../ledger/ledger.js';
import type { PlatformTotals } from '../ledger/platform-account.js';

export const CreatedAccountSchema = Type.Object(
  {
    account_id: Type.String(),
    organization: Type.String(),
    organization_id: Type.String(),
    scopes: Type.Array(StringEnum(TOKEN_SCOPES)),
    token_id: Type.String({
      description: 'The token’s id: operators list and revoke tokens by it (docs/api/admin.md).',
    }),
    token: Type.String({ description: 'Shown this once; only its hash is kept.' }),
  },
  { title: 'CreatedAccount', description: 'The new account and its first API token.' },
);
export type CreatedAccountJson = Static<typeof CreatedAccountSchema>;

export const AccountSchema = Type.Object(
  {
    account_id: Type.String(),
    name: Type.String(),
    organization: Type.String(),
    organization_id: Type.String(),
    balance: Dollars('Σ of the ledger rows: negative when the account owes.'),
    credit_limit: Nullable(
      Dollars('How far below zero the balance may go; null when none is set.'),
    ),
    created_at: Timestamp(),
  },
  { title: 'Account' },
);
export type AccountJson = Static<typeof AccountSchema>;

export const RotatedTokenSchema = Type.Object(
  {
    token_id: Type.String(),
    token: Type.String({ description: 'The new API token: shown this once, kept only hashed.' }),
    scopes: Type.Array(StringEnum(TOKEN_SCOPES), { description: 'The replaced token’s scopes.' }),
    created_at: Timestamp(),
    replaced_token_id: Type.String({
      description: 'The calling token, revoked now: refused from the next request on.',
    }),
  },
  { title: 'RotatedToken' },
);

export const TransactionsSchema = Type.Object(
  {
    transactions: Type.Array(
      Type.Object({
        transaction_id: Type.String(),
        transaction_kind: StringEnum(TRANSACTION_KINDS, {
          description:
            'What the movement of money was: a fill’s charge, a termination’s refund, a failed lease’s refund, a resale’s refund, an operator’s adjustment (a credit or correction), a payout of earnings.',
        }),
        kind: StringEnum(ENTRY_KINDS, {
          description: 'This account’s side of it (docs/api/accounts.md).',
        }),
        amount: Dollars('Negative when the account pays.'),
        order_id: Nullable(Type.String()),
        lease_id: Nullable(Type.String()),
        created_at: Timestamp(),
      }),
      { description: 'Ledger rows, newest first.' },
    ),
    ...PAGE_FIELDS,
  },
  { title: 'Transactions' },
);
export type TransactionsJson = Static<typeof TransactionsSchema>;

export const PlatformAccountSchema = Type.Object(
  {
    account_id: Type.String(),
    balance: Dollars('Σ of its ledger rows: fees_earned − fees_refunded.'),
    fees_earned: Dollars('Every platform fee received, buyers’ and sellers’.'),
    fees_refunded: Dollars('Fees given back on refunded or failed leases.'),
  },
  { title: 'PlatformAccount', description: 'The platform’s own account, where both fees go.' },
);
export type PlatformAccountJson = Static<typeof PlatformAccountSchema>;

const NodeSchema = Type.Object(
  {
    node_id: Type.String(),
    hostname: Type.String(),
    gpus: Type.Integer({ description: 'Every node is 8 GPUs.' }),
    status: StringEnum(['available', 'online', 'offline'] as const, {
      description:
        'available until an agent attaches to the cluster; then online or offline by its heartbeats.',
    }),
    last_heartbeat: Nullable(Timestamp()),
  },
  { title: 'Node' },
);

/** Who holds a cluster's cordon (market/cordon.ts). */
export const CordonedBySchema = Nullable(
  StringEnum(CORDONED_BY, {
    description:
      'Who cordoned it: operator (the exchange’s operators; only they lift it) or provider (its own provider); null when not cordoned.',
  }),
);

export const ClusterSchema = Type.Object(
  {
    cluster_id: Type.String(),
    provider_account_id: Type.String(),
    gpu_type: StringEnum(GPU_TYPES),
    zone: StringEnum(ZONES),
    created_at: Timestamp(),
    cordoned_at: Nullable(
      Timestamp(
        'When it was cordoned, by an operator or by its provider (its sells withdrawn, no new sell or resale taken); null when not cordoned.',
      ),
    ),
    cordoned_by: CordonedBySchema,
    nodes: Type.Array(NodeSchema),
  },
  { title: 'Cluster', description: 'A provider cluster.' },
);
export type ClusterJson = Static<typeof ClusterSchema>;

export const ClusterListSchema = Type.Object(
  {
    clusters: Type.Array(ClusterSchema, { description: 'Oldest first.' }),
  },
  { title: 'ClusterList' },
);

export const SshKeySchema = Type.Object(
  {
    ssh_key_id: Type.String(),
    name: Type.String(),
    type: StringEnum(SSH_KEY_TYPES, { description: 'The OpenSSH key type.' }),
    public_key: Type.String(),
    fingerprint: Type.String({ description: 'SHA256:…, as ssh-keygen -lf prints it.' }),
    created_at: Timestamp(),
  },
  { title: 'SshKey' },
);
export type SshKeyJson = Static<typeof SshKeySchema>;

export const SshKeyListSchema = Type.Object(
  {
    ssh_keys: Type.Array(SshKeySchema, { description: 'Newest first.' }),
  },
  { title: 'SshKeyList' },
);

export const SshKeyDeletedSchema = Type.Object(
  {
    ssh_key_id: Type.String(),
    deleted: Type.Literal(true),
  },
  { title: 'SshKeyDeleted' },
);

export function createdAccountView(a: CreatedAccount): CreatedAccountJson {
  return {
    account_id: a.accountId,
    organization: a.organization,
    organization_id: a.organizationId,
    scopes: [...a.scopes],
    token_id: a.tokenId,
    token: a.token,
  };
}

export function accountJson(a: AccountView): AccountJson {
  return {
    account_id: a.accountId,
    name: a.name,
    organization: a.organization,
    organization_id: a.organizationId,
    balance: formatDollars(a.balanceCents),
    credit_limit: a.creditLimitCents === null ? null : formatDollars(a.creditLimitCents),
    created_at: a.createdAt.toISOString(),
  };
}

export function transactionsView(
  page: { entries: readonly EntryView[]; total: number },
  limit: number,
  offset: number,
): TransactionsJson {
  return {
    transactions: page.entries.map((e) => ({
      transaction_id: e.transactionId,
      transaction_kind: e.transactionKind,
      kind: e.kind,
      amount: formatDollars(e.amountCents),
      order_id: e.orderId,
      lease_id: e.leaseId,
      created_at: e.createdAt.toISOString(),
    })),
    total: page.total,
    limit,
    offset,
  };
}

export function platformAccountView(accountId: string, t: PlatformTotals): PlatformAccountJson {
  return {
    account_id: accountId,
    balance: formatDollars(t.balanceCents),
    fees_earned: formatDollars(t.feesEarnedCents),
    fees_refunded: formatDollars(t.feesRefundedCents),
  };
}

export function clusterView(c: ClusterView): ClusterJson {
  return {
    cluster_id: c.clusterId,
    provider_account_id: c.providerAccountId,
    gpu_type: c.gpuType,
    zone: c.zone,
    created_at: c.createdAt.toISOString(),
    cordoned_at: c.cordonedAt?.toISOString() ?? null,
    cordoned_by: c.cordonedBy,
    nodes: c.nodes.map((n) => ({
      node_id: n.nodeId,
      hostname: n.hostname,
      gpus: GPUS_PER_NODE,
      status: n.status,
      last_heartbeat: n.lastHeartbeatAt?.toISOString() ?? null,
    })),
  };
}

export function sshKeyView(k: SshKeyView): SshKeyJson {
  return {
    ssh_key_id: k.sshKeyId,
    name: k.name,
    type: k.type,
    public_key: k.publicKey,
    fingerprint: k.fingerprint,
    created_at: k.createdAt.toISOString(),
  };
}
