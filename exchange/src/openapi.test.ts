import { ERROR_CODES } from '@gpux/shared';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { buildApp } from './app.js';
import type { Database } from './db/database.js';
import { migratedPglite } from './db/testing/fresh-database.js';
import { Market } from './market/market.js';
import { OPENAPI_PATH, buildOpenApiDocument, openApiPath } from './openapi.js';
import type {
  HttpMethodKey,
  JsonSchema,
  OpenApiDocument,
  OpenApiOperation,
  OpenApiParameter,
  OpenApiRef,
} from './openapi.js';

let db: Database;
let market: Market;
let app: FastifyInstance;
let doc: OpenApiDocument;

beforeAll(async () => {
  db = await migratedPglite();
  market = await Market.open(db, { tickIntervalMs: 0 });
  app = buildApp({ logLevel: 'silent' }, { db, adminToken: 'test-admin-token-0123456789', market });
  const res = await app.inject({ method: 'GET', url: OPENAPI_PATH });
  expect(res.statusCode).toBe(200);
  doc = res.json<OpenApiDocument>();
});

afterAll(async () => {
  await app.close();
  await market.close();
  await db.close();
});

/**
 * Every (method, url) the app serves, read from Fastify's own route tree
 * (printRoutes), independent of the onRoute hook the document is built from.
 */
function registeredRoutes(a: FastifyInstance): string[] {
  const out: string[] = [];
  const stack: string[] = [];
  for (const line of a.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^((?:│ {3}| {4})*)[├└]── (\S+)(?: \(([A-Z, ]+)\))?$/u.exec(line);
    if (m === null) continue;
    const depth = [...(m[1] ?? '')].length / 4;
    stack.length = depth;
    const url = (stack[depth - 1] ?? '') + (m[2] ?? '');
    stack.push(url);
    for (const method of (m[3] ?? '').split(', ')) {
      if (method !== '' && method !== 'HEAD') out.push(`${method} ${url}`);
    }
  }
  return out.sort();
}

function documentedRoutes(d: OpenApiDocument): string[] {
  const out: string[] = [];
  for (const [path, item] of Object.entries(d.paths)) {
    for (const method of Object.keys(item)) {
      out.push(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`);
    }
  }
  return out.sort();
}

function op(path: string, method: HttpMethodKey): OpenApiOperation {
  const o = doc.paths[path]?.[method];
  if (o === undefined) throw new Error(`no ${method} ${path} in the document`);
  return o;
}

function isRef(x: OpenApiParameter | OpenApiRef): x is OpenApiRef {
  return '$ref' in x;
}

/** Follows a local `#/a/b/c` reference. */
function resolve(ref: string): unknown {
  let at: unknown = doc;
  for (const key of ref.replace(/^#\//, '').split('/')) {
    at = (at as Record<string, unknown> | undefined)?.[key];
  }
  return at;
}

describe('GET /v1/openapi.json', () => {
  it('is an OpenAPI 3.1.0 document served without a token', async () => {
    const res = await app.inject({ method: 'GET', url: OPENAPI_PATH });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.title).toBe('gpux exchange');
    expect(doc.info.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(doc.servers.length).toBeGreaterThan(0);
    expect(doc.components.securitySchemes['bearer']).toEqual(
      expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    );
    expect(doc.security).toEqual([{ bearer: [] }]);
    expect(op(OPENAPI_PATH, 'get').security).toEqual([]);
  });

  it('lists every route the app serves, with its method, and nothing else', () => {
    const registered = registeredRoutes(app);
    // The parse above found the API (and not nothing).
    expect(registered).toEqual(
      expect.arrayContaining([
        'POST /v1/orders',
        'GET /v1/orders',
        'GET /v1/orders/:id',
        'DELETE /v1/orders/:id',
        'GET /v1/orderbook',
        'GET /v1/prices/estimate',
        'GET /v1/trades',
        'GET /v1/leases',
        'GET /v1/leases/:id',
        'DELETE /v1/leases/:id',
        'POST /v1/leases/:id/resell',
        'GET /v1/leases/:id/kubeconfig',
        'GET /v1/account',
        'GET /v1/account/transactions',
        'POST /v1/ssh_keys',
        'GET /v1/ssh_keys',
        'DELETE /v1/ssh_keys/:id',
        'POST /v1/admin/accounts',
        'POST /v1/admin/clusters',
        'GET /v1/admin/clusters',
      ]),
    );
    expect(registered.filter((r) => r.includes(' /v1/')).length).toBeGreaterThanOrEqual(21);
    expect(documentedRoutes(doc)).toEqual(registered);
  });

  it('writes path parameters the OpenAPI way and declares each', () => {
    expect(openApiPath('/v1/leases/:id/resell')).toEqual({
      path: '/v1/leases/{id}/resell',
      params: ['id'],
    });
    for (const [path, item] of Object.entries(doc.paths)) {
      expect(path).not.toContain(':');
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const o of Object.values(item)) {
        const declared = (o.parameters ?? [])
          .filter((p): p is OpenApiParameter => !isRef(p) && p.in === 'path')
          .map((p) => {
            expect(p.required).toBe(true);
            return p.name;
          });
        expect(declared).toEqual(names);
      }
    }
    const id = op('/v1/orders/{id}', 'get').parameters?.[0];
    expect(id).toEqual({
      name: 'id',
      in: 'path',
      required: true,
      schema: { type: 'string', minLength: 1, maxLength: 64 },
    });
  });

  it('gives POST /v1/orders the order schema as its JSON request body', () => {
    const body = op('/v1/orders', 'post').requestBody;
    expect(body?.required).toBe(true);
    const schema = body?.content['application/json']?.schema as JsonSchema;
    const properties = schema['properties'] as Record<string, JsonSchema>;
    expect(properties['side']).toEqual({ type: 'string', enum: ['buy', 'sell'] });
    expect(properties['gpu_count']).toMatchObject({ type: 'integer', multipleOf: 8 });
    expect(schema['required']).toEqual(
      expect.arrayContaining(['side', 'gpu_type', 'gpu_count', 'zone', 'duration_hours']),
    );
    expect(schema['additionalProperties']).toBe(false);
  });

  it('takes query parameters from the querystring schemas, defaults and limits included', () => {
    const params = (op('/v1/orders', 'get').parameters ?? []).filter(
      (p): p is OpenApiParameter => !isRef(p),
    );
    const limit = params.find((p) => p.name === 'limit');
    expect(limit).toMatchObject({ in: 'query', required: false });
    expect(limit?.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 20 });
    expect(params.map((p) => p.name)).toEqual(['status', 'side', 'limit', 'offset']);

    const estimate = (op('/v1/prices/estimate', 'get').parameters ?? []).filter(
      (p): p is OpenApiParameter => !isRef(p),
    );
    expect(estimate.find((p) => p.name === 'gpu_count')?.required).toBe(true);
    expect(estimate.find((p) => p.name === 'duration_hours')).toMatchObject({
      required: false,
      schema: { default: 24 },
    });
  });

  it('documents the status each route answers with on success', () => {
    expect(Object.keys(op('/v1/admin/accounts', 'post').responses)).toContain('201');
    expect(Object.keys(op('/v1/admin/clusters', 'post').responses)).toContain('201');
    expect(Object.keys(op('/v1/ssh_keys', 'post').responses)).toContain('201');
    expect(Object.keys(op('/v1/orders', 'post').responses)).toContain('200');
    expect(Object.keys(op('/v1/orders', 'post').responses)).not.toContain('201');
    const kube = op('/v1/leases/{id}/kubeconfig', 'get').responses['200'];
    expect(kube).toMatchObject({ content: { 'application/yaml': { schema: { type: 'string' } } } });
  });

  it('shares one D19 Error schema whose code enum is the whole catalogue', () => {
    const error = doc.components.schemas['Error'] as JsonSchema;
    expect(error['required']).toEqual(['data', 'error']);
    const properties = error['properties'] as Record<string, JsonSchema>;
    expect(properties['data']).toEqual({ type: 'null' });
    const envelope = properties['error'] as JsonSchema;
    const code = (envelope['properties'] as Record<string, JsonSchema>)['code'];
    expect(code?.['enum']).toEqual(Object.keys(ERROR_CODES));
  });

  it('lists the error responses of each route, each a known status pointing at the Error schema', () => {
    const statuses = new Set(Object.values(ERROR_CODES).map((e) => String(e.status)));
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, o] of Object.entries(item)) {
        const codes = Object.keys(o.responses);
        expect(codes, `${method} ${path}`).toContain('500');
        if (!path.startsWith('/v1/') || path === OPENAPI_PATH) continue;
        expect(codes, `${method} ${path}`).toContain('401');
        for (const c of codes.filter((x) => Number(x) >= 400)) expect(statuses).toContain(c);
      }
    }
    expect(Object.keys(op('/v1/orders', 'post').responses)).toEqual(
      expect.arrayContaining(['400', '401', '402', '403', '409', '413', '422', '429', '500']),
    );
    expect(Object.keys(op('/v1/orders/{id}', 'delete').responses)).toContain('404');
    expect(Object.keys(op('/v1/leases/{id}/kubeconfig', 'get').responses)).toContain('409');
    const r409 = doc.components.responses['Error409'];
    expect(r409?.description).toContain('order_already_filled');
    const schema = r409?.content?.['application/json']?.schema;
    expect(JSON.stringify(schema)).toContain('#/components/schemas/Error');
  });

  it('has no dangling $ref and unique operation ids', () => {
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1] ?? '');
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect(resolve(ref), ref).toBeDefined();
    const ids = Object.values(doc.paths).flatMap((item) =>
      Object.values(item).map((o) => o.operationId),
    );
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('copies schemas rather than sharing the objects the validators use', () => {
    const schema = { type: 'object', properties: { n: { type: 'integer' } } };
    const built = buildOpenApiDocument([
      { method: 'POST', url: '/v1/x', schema: { body: schema } },
    ]);
    const body = built.paths['/v1/x']?.post?.requestBody?.content['application/json']?.schema;
    expect(body).toEqual(schema);
    expect(body).not.toBe(schema);
  });
});
