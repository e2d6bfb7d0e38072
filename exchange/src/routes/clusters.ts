// POST /v1/admin/clusters and GET /v1/admin/clusters (D31).

import { GPU_TYPES, ZONES } from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { createCluster, listClusters } from '../accounts/clusters.js';
import { reasonOf, recordAudit } from '../admin/audit.js';
import { operatorOf } from '../auth/authenticate.js';
import { MAX_CLUSTER_NODES } from '../providers/agent-limits.js';
import { StringEnum } from '../http/schema.js';
import type { RouteContext } from '../services.js';
import { ClusterListSchema, ClusterSchema, clusterView } from '../views/accounts.js';
import { Reason } from '../views/admin.js';

/**
 * A cluster of MAX_CLUSTER_NODES nodes with the longest hostnames is about
 * 270 KB of JSON, over the API's 64 KiB: this route takes more (issue 18).
 */
export const CLUSTER_BODY_LIMIT_BYTES = 512 * 1024;

/** RFC 1123 host names: dot-separated labels of letters, digits and inner hyphens (http/validation.ts). */
const Hostname = Type.String({ maxLength: 253, format: 'hostname', examples: ['gpu-node-01'] });

const CreateClusterBody = Type.Object(
  {
    provider_account_id: Type.String({ minLength: 1, maxLength: 64 }),
    gpu_type: StringEnum(GPU_TYPES),
    zone: StringEnum(ZONES),
    nodes: Type.Array(Type.Object({ hostname: Hostname }, { additionalProperties: false }), {
      minItems: 1,
      maxItems: MAX_CLUSTER_NODES,
    }),
    reason: Type.Optional(Reason()),
  },
  { title: 'CreateCluster', additionalProperties: false },
);

export const clusterRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.post(
    '/v1/admin/clusters',
    {
      config: { access: 'admin' },
      bodyLimit: CLUSTER_BODY_LIMIT_BYTES,
      schema: {
        summary: 'Register a provider cluster and its nodes',
        tags: ['admin'],
        body: CreateClusterBody,
        response: { 201: ClusterSchema },
      },
    },
    async (request, reply) => {
      const b = request.body;
      const reason = b.reason === undefined ? null : reasonOf(b.reason);
      const cluster = await ctx.db.transaction(async (tx) => {
        const c = await createCluster(tx, {
          providerAccountId: b.provider_account_id,
          gpuType: b.gpu_type,
          zone: b.zone,
          hostnames: b.nodes.map((n) => n.hostname.toLowerCase()),
        });
        await recordAudit(tx, {
          operator: operatorOf(request),
          action: 'cluster.create',
          targetType: 'cluster',
          targetId: c.clusterId,
          reason,
          before: null,
          after: {
            provider_account_id: c.providerAccountId,
            gpu_type: c.gpuType,
            zone: c.zone,
            nodes: c.nodes.length,
          },
        });
        return c;
      });
      request.log.info({ cluster_id: cluster.clusterId }, 'cluster created');
      ctx.directory.forgetClusters(b.provider_account_id);
      return reply.code(201).send(clusterView(cluster));
    },
  );

  app.get(
    '/v1/admin/clusters',
    {
      config: { access: 'admin' },
      schema: {
        summary: 'Every cluster with its nodes’ status and last heartbeat',
        tags: ['admin'],
        response: { 200: ClusterListSchema },
      },
    },
    async () => ({ clusters: (await listClusters(ctx.db)).map(clusterView) }),
  );

  done();
};
