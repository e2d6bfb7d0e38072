import { randomBytes } from 'node:crypto';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { buildApp } from '../app.js';
import { SecretBox } from '../leases/secret-box.js';
import { Market } from '../market/market.js';
import { migrate } from '../db/migrate.js';
import { freshPostgres } from '../db/testing/fresh-database.js';
import type { FreshDatabase } from '../db/testing/fresh-database.js';
import { guardSerialization } from '../http/testing/serialization-guard.js';
import type { SerializationGuard } from '../http/testing/serialization-guard.js';

const ADMIN = 'test-admin-token-0123456789';
let fresh: FreshDatabase;
let market: Market;
let app: FastifyInstance;
let providerId: string;

async function call(
  method: 'GET' | 'POST',
  url: string,
  payload?: unknown,
  token = ADMIN,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${token}` },
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  });
  return { status: res.statusCode, json: res.json<Record<string, unknown>>() };
}

let guard: SerializationGuard;

beforeAll(async () => {
  fresh = await freshPostgres();
  await migrate(fresh.db);
  market = await Market.open(fresh.db, { tickIntervalMs: 0 });
  app = buildApp(
    { logLevel: 'silent' },
    { db: fresh.db, adminToken: ADMIN, market, secrets: new SecretBox(randomBytes(32)) },
  );
  // Every answer must serialize to exactly its view (http/testing/serialization-guard.ts).
  guard = guardSerialization(app);
  const r = await call('POST', '/v1/admin/accounts', {
    name: 'provider',
    organization: 'gpu-farm',
    scopes: ['provider', 'trade', 'read'],
  });
  providerId = r.json['account_id'] as string;
});

afterAll(async () => {
  expect(guard.mismatches).toEqual([]);
  await app.close();
  await fresh.drop();
});

describe('POST /v1/admin/clusters (D31)', () => {
  it('registers a cluster of 8-GPU nodes, available until an agent attaches', async () => {
    const r = await call('POST', '/v1/admin/clusters', {
      provider_account_id: providerId,
      gpu_type: 'h100',
      zone: 'us-west-1',
      nodes: [{ hostname: 'gpu-node-1.example' }, { hostname: 'GPU-NODE-2.example' }],
    });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({
      provider_account_id: providerId,
      gpu_type: 'h100',
      zone: 'us-west-1',
    });
    expect(r.json['cluster_id']).toMatch(/^cls_/);
    expect(r.json['nodes']).toEqual([
      expect.objectContaining({
        hostname: 'gpu-node-1.example',
        gpus: 8,
        status: 'available',
        last_heartbeat: null,
      }),
      expect.objectContaining({ hostname: 'gpu-node-2.example', gpus: 8, status: 'available' }),
    ]);
  });

  it('lists clusters with their nodes', async () => {
    const made = await call('POST', '/v1/admin/clusters', {
      provider_account_id: providerId,
      gpu_type: 'b300',
      zone: 'eu-west-1',
      nodes: [{ hostname: 'listed-1' }, { hostname: 'listed-2' }],
    });
    expect(made.status).toBe(201);
    const r = await call('GET', '/v1/admin/clusters');
    expect(r.status).toBe(200);
    const clusters = r.json['clusters'] as Record<string, unknown>[];
    const listed = clusters.find((c) => c['cluster_id'] === made.json['cluster_id']);
    expect(listed).toMatchObject({
      provider_account_id: providerId,
      gpu_type: 'b300',
      zone: 'eu-west-1',
    });
    expect((listed?.['nodes'] as { hostname: string }[]).map((n) => n.hostname)).toEqual([
      'listed-1',
      'listed-2',
    ]);
  });

  it.each([
    ['an unknown gpu_type', { gpu_type: 'a100' }],
    ['an unknown zone', { zone: 'mars-1' }],
    ['no nodes', { nodes: [] }],
    ['a hostname with a space', { nodes: [{ hostname: 'bad host' }] }],
    ['a hostname starting with a hyphen', { nodes: [{ hostname: '-node' }] }],
    ['the same hostname twice', { nodes: [{ hostname: 'n1' }, { hostname: 'N1' }] }],
    ['an unknown provider account', { provider_account_id: 'acc_missing' }],
    ['an unknown field', { gpus_per_node: 4 }],
  ])('refuses %s with 400 invalid_request', async (_what, change) => {
    const r = await call('POST', '/v1/admin/clusters', {
      provider_account_id: providerId,
      gpu_type: 'h100',
      zone: 'us-west-1',
      nodes: [{ hostname: 'n1' }],
      ...change,
    });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ data: null, error: { code: 'invalid_request' } });
  });

  it('needs the admin token, checked before the body (401 even for a bad body)', async () => {
    expect(
      (await call('POST', '/v1/admin/clusters', { nonsense: true }, 'wrong-token')).status,
    ).toBe(401);
    expect((await call('GET', '/v1/admin/clusters', undefined, 'wrong-token')).json).toMatchObject({
      error: { code: 'unauthorized' },
    });
  });
});
