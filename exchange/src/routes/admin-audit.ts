// GET /v1/admin/audit: what operators changed, who, when and why (issue 21,
// docs/api/admin.md), newest first, filtered and paged like every list.

import { fieldError } from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { AUDIT_ACTIONS, AUDIT_TARGET_TYPES, listAudit } from '../admin/audit.js';
import { PAGE_QUERY, StringEnum, Timestamp } from '../http/schema.js';
import type { RouteContext } from '../services.js';
import { AuditListSchema, auditEntryView } from '../views/admin.js';

const Id = (description: string): ReturnType<typeof Type.String> =>
  Type.String({ minLength: 1, maxLength: 64, description });

const AuditQuery = Type.Object(
  {
    actor: Type.Optional(Id('admin_token, or the account id of an operator’s admin-scope token.')),
    action: Type.Optional(StringEnum(AUDIT_ACTIONS)),
    target_type: Type.Optional(StringEnum(AUDIT_TARGET_TYPES)),
    target_id: Type.Optional(Id('The account, cluster, … changed.')),
    since: Type.Optional(Timestamp('Entries at or after this time.')),
    until: Type.Optional(Timestamp('Entries before this time.')),
    ...PAGE_QUERY,
  },
  { additionalProperties: false },
);

export const adminAuditRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.get(
    '/v1/admin/audit',
    {
      config: { access: 'admin' },
      schema: {
        summary: 'The audit log: every change made through the admin API, newest first',
        tags: ['admin'],
        querystring: AuditQuery,
        response: { 200: AuditListSchema },
      },
    },
    async (request) => {
      const q = request.query;
      const since = q.since === undefined ? undefined : new Date(q.since);
      const until = q.until === undefined ? undefined : new Date(q.until);
      if (since !== undefined && until !== undefined && since >= until) {
        throw fieldError('until', 'conflict', 'until must be after since');
      }
      const page = await listAudit(ctx.db, {
        actor: q.actor,
        action: q.action,
        targetType: q.target_type,
        targetId: q.target_id,
        since,
        until,
        limit: q.limit,
        offset: q.offset,
      });
      return {
        entries: page.rows.map(auditEntryView),
        total: page.total,
        limit: q.limit,
        offset: q.offset,
      };
    },
  );

  done();
};
