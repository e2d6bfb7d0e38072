// POST /v1/admin/clusters and GET /v1/admin/clusters (D31).

import { GPUS_PER_NODE, GPU_TYPES, ZONES } from '@gpux/shared';
import type { GpuType, Zone } from '@gpux/shared';
import type { FastifyInstance } from 'fastify';

import type { ClusterView } from '../accounts/clusters.js';
import { createCluster, listClusters } from '../accounts/clusters.js';
import { adminOnly } from '../auth/authenticate.js';
import type { RouteContext } from '../services.js';

/** RFC 1123 host names: dot-separated labels of letters, digits and inner hyphens. */
const HOSTNAME = {
  type: 'string',
  maxLength: 253,
  pattern:
    '^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$',
} as const;

const createClusterBody = {
  type: 'object',
  additionalProperties: false,
  required: ['provider_account_id', 'gpu_type', 'zone', 'nodes'],
  properties: {
    provider_account_id: { type: 'string', minLength: 1, maxLength: 64 },
    gpu_type: { type: 'string', enum: [...GPU_TYPES] },
    zone: { type: 'string', enum: [...ZONES] },
    nodes: {
      type: 'array',
      minItems: 1,
      maxItems: 1000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['hostname'],
        properties: { hostname: HOSTNAME },
      },
    },
  },
} as const;

interface CreateClusterBody {
  provider_account_id: string;
  gpu_type: GpuType;
  zone: Zone;
  nodes: { hostname: string }[];
}

function clusterJson(c: ClusterView): Record<string, unknown> {
  return {
    cluster_id: c.clusterId,
    provider_account_id: c.providerAccountId,
    gpu_type: c.gpuType,
    zone: c.zone,
    created_at: c.createdAt.toISOString(),
    nodes: c.nodes.map((n) => ({
      node_id: n.nodeId,
      hostname: n.hostname,
      gpus: GPUS_PER_NODE,
      status: n.status,
      last_heartbeat: n.lastHeartbeatAt?.toISOString() ?? null,
    })),
  };
}

export function clusterRoutes(
  app: FastifyInstance,
  { db, adminToken, directory }: RouteContext,
): void {
  app.post<{ Body: CreateClusterBody }>(
    '/v1/admin/clusters',
    {
      schema: { body: createClusterBody },
      preValidation: adminOnly(adminToken),
    },
    async (request, reply) => {
      const b = request.body;
      const cluster = await db.transaction((tx) =>
        createCluster(tx, {
          providerAccountId: b.provider_account_id,
          gpuType: b.gpu_type,
          zone: b.zone,
          hostnames: b.nodes.map((n) => n.hostname.toLowerCase()),
        }),
      );
      directory.forgetClusters(b.provider_account_id);
      return reply.code(201).send(clusterJson(cluster));
    },
  );

  app.get('/v1/admin/clusters', { preValidation: adminOnly(adminToken) }, async () => {
    return { clusters: (await listClusters(db)).map(clusterJson) };
  });
}
