// The JSON of the operators' API (issue 21, docs/api/admin.md): accounts as
// operators see them, tokens without their secrets, the audit log. Money in
// dollars rounded to cents (D1).

import { TOKEN_SCOPES, formatDollars } from '@gpux/shared';
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

import { ACCOUNT_STATUSES } from '../admin/accounts.js';
import type { AdminAccountView, TokenView } from '../admin/accounts.js';
import { AUDIT_ACTIONS, AUDIT_TARGET_TYPES, MAX_REASON_LENGTH } from '../admin/audit.js';
import type { AuditEntry } from '../admin/audit.js';
import { Dollars, Nullable, PAGE_FIELDS, StringEnum, Timestamp } from '../http/schema.js';

/** The reason an operator gives for a change: kept in the audit log. */
export const Reason = (): ReturnType<typeof Type.String> =>
  Type.String({
    minLength: 1,
    maxLength: MAX_REASON_LENGTH,
    description:
      'Why: kept in the audit log (GET /v1/admin/audit). Not blank, at most 1000 characters.',
    examples: ['customer reported the token leaked in a public repository'],
  });

export const AdminAccountSchema = Type.Object(
  {
    account_id: Type.String(),
    name: Type.String(),
    organization: Type.String(),
    organization_id: Type.String(),
    status: StringEnum(ACCOUNT_STATUSES, {
      description: 'suspended: every token of the account is refused with account_suspended.',
    }),
    suspended_at: Nullable(Timestamp('When it was suspended; null while active.')),
    scopes: Type.Array(StringEnum(TOKEN_SCOPES), {
      description: 'Every scope some live token of the account holds.',
    }),
    live_tokens: Type.Integer({ minimum: 0, description: 'Tokens not revoked.' }),
    balance: Dollars('Σ of the ledger rows: negative when the account owes.'),
    credit_limit: Nullable(
      Dollars('How far below zero the balance may go; null when none is set.'),
    ),
    created_at: Timestamp(),
  },
  { title: 'AdminAccount', description: 'An account as operators see it.' },
);
export type AdminAccountJson = Static<typeof AdminAccountSchema>;

export const AdminAccountListSchema = Type.Object(
  {
    accounts: Type.Array(AdminAccountSchema, { description: 'Newest first.' }),
    ...PAGE_FIELDS,
  },
  { title: 'AdminAccountList' },
);

export const SuspensionSchema = Type.Object(
  {
    account: AdminAccountSchema,
    cancelled_order_ids: Type.Array(Type.String(), {
      description:
        'The open orders this call cancelled (cancel_reason account_suspended); its live leases are kept.',
    }),
  },
  { title: 'AccountSuspension' },
);

export const TokenSchema = Type.Object(
  {
    token_id: Type.String(),
    account_id: Type.String(),
    scopes: Type.Array(StringEnum(TOKEN_SCOPES)),
    created_at: Timestamp(),
    revoked_at: Nullable(Timestamp('When it was revoked; null while live.')),
  },
  { title: 'Token', description: 'An API token, without its secret.' },
);
export type TokenJson = Static<typeof TokenSchema>;

export const TokenListSchema = Type.Object(
  { tokens: Type.Array(TokenSchema, { description: 'Newest first, live and revoked.' }) },
  { title: 'TokenList' },
);

export const IssuedTokenSchema = Type.Object(
  {
    token_id: Type.String(),
    account_id: Type.String(),
    scopes: Type.Array(StringEnum(TOKEN_SCOPES)),
    created_at: Timestamp(),
    revoked_at: Nullable(Timestamp('Always null: a new token is live.')),
    token: Type.String({ description: 'Shown this once; only its hash is kept.' }),
  },
  { title: 'IssuedToken', description: 'A new API token and its secret.' },
);

const AuditState = Nullable(
  Type.Object(
    {},
    { additionalProperties: true, description: 'The target as the API shows it; never a secret.' },
  ),
);

export const AuditEntrySchema = Type.Object(
  {
    audit_id: Type.String(),
    at: Timestamp(),
    actor: Type.String({
      description:
        'The operator: admin_token (GPUX_ADMIN_TOKEN) or the account id of an admin-scope token.',
    }),
    actor_token_id: Nullable(
      Type.String({ description: 'The operator’s token; null for the admin token.' }),
    ),
    action: StringEnum(AUDIT_ACTIONS),
    target_type: StringEnum(AUDIT_TARGET_TYPES),
    target_id: Type.String(),
    reason: Nullable(Type.String()),
    before: AuditState,
    after: AuditState,
  },
  { title: 'AuditEntry', description: 'One change an operator made.' },
);
export type AuditEntryJson = Static<typeof AuditEntrySchema>;

export const AuditListSchema = Type.Object(
  {
    entries: Type.Array(AuditEntrySchema, { description: 'Newest first.' }),
    ...PAGE_FIELDS,
  },
  { title: 'AuditList' },
);

export function adminAccountView(a: AdminAccountView): AdminAccountJson {
  return {
    account_id: a.accountId,
    name: a.name,
    organization: a.organization,
    organization_id: a.organizationId,
    status: a.status,
    suspended_at: a.suspendedAt?.toISOString() ?? null,
    scopes: [...a.scopes],
    live_tokens: a.liveTokens,
    balance: formatDollars(a.balanceCents),
    credit_limit: a.creditLimitCents === null ? null : formatDollars(a.creditLimitCents),
    created_at: a.createdAt.toISOString(),
  };
}

export function tokenJson(t: TokenView): TokenJson {
  return {
    token_id: t.tokenId,
    account_id: t.accountId,
    scopes: [...t.scopes],
    created_at: t.createdAt.toISOString(),
    revoked_at: t.revokedAt?.toISOString() ?? null,
  };
}

export function auditEntryView(e: AuditEntry): AuditEntryJson {
  return {
    audit_id: e.id,
    at: e.at.toISOString(),
    actor: e.actor,
    actor_token_id: e.actorTokenId,
    action: e.action,
    target_type: e.targetType,
    target_id: e.targetId,
    reason: e.reason,
    before: e.before === null ? null : { ...e.before },
    after: e.after === null ? null : { ...e.after },
  };
}
