// The audit log of the operators' API (issue 21, docs/api/admin.md): every
// admin call that changes something writes one row, in the same transaction
// as the change, naming the operator (the admin token or an `admin`-scope
// account and its token), the action, its target, the reason given, and the
// target as it was before and after. Rows are never edited or removed
// (migrations/0015).

import { fieldError, newId } from '@gpux/shared';

import type { Operator } from '../auth/authenticate.js';
import type { Queryable } from '../db/database.js';
import type { AuditRow } from '../market/change-set.js';

/** What an operator can do, as the audit log names it: `<target>.<verb>`. */
export const AUDIT_ACTIONS = [
  'account.create',
  'account.suspend',
  'account.reinstate',
  'account.credit_limit',
  'token.issue',
  'token.revoke',
  'cluster.create',
  'cluster.cordon',
  'cluster.uncordon',
  'lease.fail',
  'lease.revoke',
  'account.adjustment',
  'account.payout',
  'book.halt',
  'book.resume',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** What an action changes. */
export const AUDIT_TARGET_TYPES = ['account', 'cluster', 'lease', 'book'] as const;
export type AuditTargetType = (typeof AUDIT_TARGET_TYPES)[number];

/** A reason an operator gives: required on the state-changing calls, bounded. */
export const MAX_REASON_LENGTH = 1000;

/** A reason as kept: trimmed, and not blank (the schema bounds its length). */
export function reasonOf(reason: string, field = 'reason'): string {
  const trimmed = reason.trim();
  if (trimmed === '') {
    throw fieldError(field, 'invalid', `${field} must say why, not be blank`);
  }
  return trimmed;
}

/** JSON of the target, before or after (never a secret). */
export type AuditState = Readonly<Record<string, unknown>>;

export interface AuditRecord {
  readonly operator: Operator;
  readonly action: AuditAction;
  readonly targetType: AuditTargetType;
  readonly targetId: string;
  readonly reason: string | null;
  readonly before: AuditState | null;
  readonly after: AuditState | null;
}

/**
 * The row of `r`, for a book's write batch to commit with the change it
 * records (ChangeSet.audits: a lease action is made by the book's writer).
 */
export function auditRow(r: AuditRecord): AuditRow {
  return {
    id: newId('aud_'),
    actor: r.operator.actor,
    actor_token_id: r.operator.tokenId,
    action: r.action,
    target_type: r.targetType,
    target_id: r.targetId,
    reason: r.reason,
    before: r.before,
    after: r.after,
  };
}

/** Writes the row; call it inside the transaction of the change it records. */
export async function recordAudit(tx: Queryable, r: AuditRecord): Promise<string> {
  const row = auditRow(r);
  await tx.query(
    `INSERT INTO audit_log (id, actor, actor_token_id, action, target_type, target_id, reason, before, after)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb)`,
    [
      row.id,
      row.actor,
      row.actor_token_id,
      row.action,
      row.target_type,
      row.target_id,
      row.reason,
      r.before === null ? null : JSON.stringify(r.before),
      r.after === null ? null : JSON.stringify(r.after),
    ],
  );
  return row.id;
}

export interface AuditEntry {
  readonly id: string;
  readonly at: Date;
  readonly actor: string;
  readonly actorTokenId: string | null;
  readonly action: AuditAction;
  readonly targetType: AuditTargetType;
  readonly targetId: string;
  readonly reason: string | null;
  readonly before: AuditState | null;
  readonly after: AuditState | null;
}

export interface AuditFilter {
  readonly actor?: string | undefined;
  readonly action?: AuditAction | undefined;
  readonly targetType?: AuditTargetType | undefined;
  readonly targetId?: string | undefined;
  /** At or after. */
  readonly since?: Date | undefined;
  /** Before. */
  readonly until?: Date | undefined;
  readonly limit: number;
  readonly offset: number;
}

/** Rows matching the filter, newest first, and how many match. */
export async function listAudit(
  q: Queryable,
  f: AuditFilter,
): Promise<{ rows: AuditEntry[]; total: number }> {
  const where: string[] = [];
  const args: unknown[] = [];
  const add = (sql: string, value: unknown): void => {
    args.push(value);
    where.push(sql.replace('?', `$${args.length}`));
  };
  if (f.actor !== undefined) add('actor = ?', f.actor);
  if (f.action !== undefined) add('action = ?', f.action);
  if (f.targetType !== undefined) add('target_type = ?', f.targetType);
  if (f.targetId !== undefined) add('target_id = ?', f.targetId);
  if (f.since !== undefined) add('at >= ?', f.since);
  if (f.until !== undefined) add('at < ?', f.until);
  const cond = where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
  const [count] = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM audit_log ${cond}`,
    args,
  );
  const rows = await q.query<{
    id: string;
    at: Date;
    actor: string;
    actor_token_id: string | null;
    action: AuditAction;
    target_type: AuditTargetType;
    target_id: string;
    reason: string | null;
    before: AuditState | null;
    after: AuditState | null;
  }>(
    `SELECT id, at, actor, actor_token_id, action, target_type, target_id, reason, before, after
       FROM audit_log ${cond}
      ORDER BY at DESC, id DESC
      LIMIT $${args.length + 1} OFFSET $${args.length + 2}`,
    [...args, f.limit, f.offset],
  );
  return {
    total: count?.n ?? 0,
    rows: rows.map((r) => ({
      id: r.id,
      at: r.at,
      actor: r.actor,
      actorTokenId: r.actor_token_id,
      action: r.action,
      targetType: r.target_type,
      targetId: r.target_id,
      reason: r.reason,
      before: r.before,
      after: r.after,
    })),
  };
}
