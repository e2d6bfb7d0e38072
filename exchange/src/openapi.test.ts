// The OpenAPI document as the app generates it, from an app built without
// services (as `npm run gen` does): valid OpenAPI 3.1, every route with its
// responses, security, headers and parameters from the route contracts, and
// identical to the checked-in docs/api/openapi.json.

import { readFileSync } from 'node:fs';

import { Validator } from '@seriousme/openapi-schema-validator';
import { ERROR_CODES } from '@gpux/shared';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { buildApp } from './app.js';
import { contractOf } from './http/route-contract.js';
import type { RouteContract } from './http/route-contract.js';
import { METRICS_PATH } from './metrics/metrics-route.js';
import { OPENAPI_PATH } from './openapi.js';

type Json = Record<string, unknown>;

interface Route {
  readonly method: string;
  readonly url: string;
  readonly contract: RouteContract;
}

let app: FastifyInstance;
let doc: Json;
const routes: Route[] = [];

beforeAll(async () => {
  app = buildApp({ logLevel: 'silent' }, 'offline');
  // Every route as Fastify registers it, independent of the document's own records.
  app.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) {
      // GET /metrics is Prometheus text for operators, outside the API and
      // its document on purpose (metrics/metrics-route.ts, docs/metrics.md).
      if (method !== 'HEAD' && r.url !== METRICS_PATH) {
        routes.push({ method, url: r.url, contract: contractOf(r.method, r.url, r.config) });
      }
    }
  });
  const res = await app.inject({ method: 'GET', url: OPENAPI_PATH });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  doc = res.json<Json>();
});

afterAll(async () => {
  await app.close();
});

function obj(x: unknown): Json {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) throw new Error('not an object');
  return x as Json;
}

function pathOf(url: string): string {
  return url.replace(/:(\w+)/g, '{$1}');
}

function op(method: string, url: string): Json {
  return obj(obj(obj(doc['paths'])[pathOf(url)])[method.toLowerCase()]);
}

function responses(method: string, url: string): Json {
  return obj(op(method, url)['responses']);
}

/** Follows a local `#/a/b/c` reference. */
function resolve(reference: string): unknown {
  let at: unknown = doc;
  for (const key of reference.replace(/^#\//, '').split('/')) {
    at = (at as Json | undefined)?.[key.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  return at;
}

function deref(x: unknown): Json {
  const o = obj(x);
  return typeof o['$ref'] === 'string' ? obj(resolve(o['$ref'])) : o;
}

describe('the OpenAPI document (GET /v1/openapi.json, npm run gen)', () => {
  it('is valid OpenAPI 3.1', async () => {
    expect(doc['openapi']).toBe('3.1.0');
    const result = await new Validator().validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('lists every route the app serves, with its method, and nothing else', () => {
    expect(routes.length).toBeGreaterThanOrEqual(22);
    const documented = Object.entries(obj(doc['paths'])).flatMap(([path, item]) =>
      Object.keys(obj(item)).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(documented.sort()).toEqual(routes.map((r) => `${r.method} ${pathOf(r.url)}`).sort());
  });

  it('documents the success of every route with its schema, and its errors in the D19 envelope', () => {
    for (const r of routes) {
      const where = `${r.method} ${r.url}`;
      const rs = responses(r.method, r.url);
      const success = Object.keys(rs).filter((s) => s.startsWith('2'));
      expect(success, where).toHaveLength(1);
      const content = obj(deref(rs[success[0] ?? ''])['content']);
      const [media] = Object.keys(content);
      expect(obj(content[media ?? ''])['schema'], where).toBeDefined();
      expect(Object.keys(rs), where).toEqual(expect.arrayContaining(['500', '503']));
      for (const [status, response] of Object.entries(rs)) {
        if (Number(status) < 400) continue;
        const schema = obj(obj(obj(obj(response)['content'])['application/json'])['schema']);
        const [base, narrowed] = schema['allOf'] as Json[];
        expect(base, where).toEqual({ $ref: '#/components/schemas/Error' });
        const codes = obj(obj(obj(obj(narrowed)['properties'])['error'])['properties'])['code'];
        for (const code of obj(codes)['enum'] as (keyof typeof ERROR_CODES)[]) {
          expect(ERROR_CODES[code].status, `${where} ${status} ${code}`).toBe(Number(status));
        }
      }
    }
  });

  it('takes security, rate-limit headers, Idempotency-Key and auth errors from each route contract', () => {
    for (const r of routes) {
      const where = `${r.method} ${r.url}`;
      const o = op(r.method, r.url);
      const rs = responses(r.method, r.url);
      const success = deref(rs[Object.keys(rs).find((s) => s.startsWith('2')) ?? '']);
      const params = JSON.stringify(o['parameters'] ?? []);
      if (r.contract.access === 'public') {
        expect(o['security'], where).toEqual([]);
        // Only a public route that checks a credential itself (the console's sign-in) says 401.
        if (!(r.contract.errors ?? []).includes('unauthorized')) {
          expect(rs['401'], where).toBeUndefined();
        }
      } else {
        // The admin API also takes the console's session cookie (docs/console.md).
        expect(o['security'], where).toEqual(
          r.contract.access === 'admin'
            ? [{ bearer: [] }, { console_session: [] }]
            : [{ bearer: [] }],
        );
        expect(Object.keys(rs), where).toEqual(expect.arrayContaining(['401', '403']));
      }
      if (r.contract.access === 'customer') {
        // D18: on every customer answer; 429 with Retry-After.
        expect(Object.keys(obj(success['headers'])), where).toEqual([
          'X-RateLimit-Limit',
          'X-RateLimit-Remaining',
          'X-RateLimit-Reset',
        ]);
        expect(Object.keys(obj(obj(rs['429'])['headers'])), where).toContain('Retry-After');
        // One scope, or any of several: "`trade` or `provider` scope".
        const scopes = [r.contract.scope].flat().map((x) => `\`${x}\``);
        expect(String(o['description']), where).toContain(`${scopes.join(' or ')} scope`);
      } else if (r.contract.access === 'public' && r.contract.rate === 'address') {
        // Counted per client address: 429 with Retry-After, no per-account headers.
        expect(success['headers'], where).toBeUndefined();
        expect(Object.keys(obj(obj(rs['429'])['headers'])), where).toEqual(['Retry-After']);
        expect(String(o['description']), where).toContain('per client address');
      } else {
        expect(success['headers'], where).toBeUndefined();
        expect(rs['429'], where).toBeUndefined();
      }
      // D23: customer POST and DELETE.
      const idempotent =
        r.contract.access === 'customer' && (r.method === 'POST' || r.method === 'DELETE');
      expect(params.includes('#/components/parameters/IdempotencyKey'), where).toBe(idempotent);
    }
  });

  it('lists a route’s own refusals under their statuses', () => {
    const place = responses('POST', '/v1/orders');
    expect(Object.keys(place)).toEqual(
      expect.arrayContaining(['400', '402', '409', '413', '422', '429']),
    );
    expect(JSON.stringify(place['409'])).toContain('insufficient_liquidity');
    expect(JSON.stringify(responses('DELETE', '/v1/orders/:id')['409'])).toContain(
      'order_already_filled',
    );
    expect(JSON.stringify(responses('GET', '/v1/leases/:id/kubeconfig')['409'])).toContain(
      'lease_not_ready',
    );
  });

  it('answers 201 where the route creates, and YAML for the kubeconfig (D28)', () => {
    for (const [method, url] of [
      ['POST', '/v1/admin/accounts'],
      ['POST', '/v1/admin/clusters'],
      ['POST', '/v1/ssh_keys'],
    ] as const) {
      expect(Object.keys(responses(method, url))).toContain('201');
    }
    expect(Object.keys(responses('POST', '/v1/orders'))).toContain('200');
    expect(obj(responses('GET', '/v1/leases/:id/kubeconfig')['200'])['content']).toEqual({
      'application/yaml': { schema: { type: 'string' } },
    });
  });

  it('writes nullable fields as type [T, "null"], never 3.0’s nullable', () => {
    const text = JSON.stringify(doc);
    expect(text).not.toContain('"nullable"');
    const account = obj(obj(obj(doc['components'])['schemas'])['Account']);
    expect(obj(obj(account['properties'])['credit_limit'])['type']).toEqual(['number', 'null']);
    const order = obj(obj(obj(doc['components'])['schemas'])['Order']);
    const reason = obj(obj(order['properties'])['cancel_reason']);
    expect(reason['type']).toEqual(['string', 'null']);
    expect(reason['enum']).toContain(null);
  });

  it('gives request bodies, query and path parameters their validating schemas', () => {
    const body = deref(
      obj(obj(obj(op('POST', '/v1/orders')['requestBody'])['content'])['application/json'])[
        'schema'
      ],
    );
    expect(body['additionalProperties']).toBe(false);
    expect(obj(body['properties'])['gpu_count']).toMatchObject({
      type: 'integer',
      multipleOf: 8,
    });
    const params = op('GET', '/v1/orders')['parameters'] as Json[];
    expect(params.map((p) => p['name'])).toEqual(['status', 'side', 'limit', 'offset']);
    expect(params.find((p) => p['name'] === 'limit')).toMatchObject({
      in: 'query',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
    });
    expect((op('GET', '/v1/orders/:id')['parameters'] as Json[])[0]).toMatchObject({
      name: 'id',
      in: 'path',
      required: true,
    });
  });

  it('says what a client can check: whole nodes, times, closed sets, required parameters', () => {
    // Every property schema in the document, with where it is.
    const properties: [string, Json][] = [];
    const walk = (node: unknown, at: string): void => {
      if (Array.isArray(node)) node.forEach((n, i) => walk(n, `${at}[${i}]`));
      if (typeof node !== 'object' || node === null || Array.isArray(node)) return;
      const o = node as Json;
      if (typeof o['name'] === 'string' && typeof o['in'] === 'string' && o['schema']) {
        properties.push([String(o['name']), obj(o['schema'])]);
      }
      const props = o['properties'];
      if (typeof props === 'object' && props !== null) {
        for (const [k, v] of Object.entries(props)) properties.push([k, obj(v)]);
      }
      for (const [k, v] of Object.entries(o)) walk(v, `${at}.${k}`);
    };
    walk(doc, '#');
    const named = (re: RegExp): Json[] => properties.filter(([k]) => re.test(k)).map(([, v]) => v);

    // D5: a gpu_count is whole 8-GPU nodes, in requests and answers.
    expect(named(/^gpu_count$/).length).toBeGreaterThanOrEqual(5);
    for (const s of named(/^gpu_count$/)) expect(s).toMatchObject({ multipleOf: 8, minimum: 8 });
    // Every time, asked or answered, is a date-time.
    const times = named(/(_time|_at|^timestamp|^available_(from|until)|^last_heartbeat)$/);
    expect(times.length).toBeGreaterThanOrEqual(20);
    for (const s of times) expect(s['format']).toBe('date-time');
    // Closed sets are enums.
    for (const name of [
      'gpu_type',
      'zone',
      'side',
      'order_type',
      'status',
      'transaction_kind',
      'kind',
      'scopes',
      'rule',
      'code',
    ]) {
      const schemas = named(new RegExp(`^${name}$`));
      expect(schemas.length, name).toBeGreaterThan(0);
      for (const s of schemas) {
        const e = s['type'] === 'array' ? obj(s['items'])['enum'] : s['enum'];
        expect(Array.isArray(e), `${name}: ${JSON.stringify(s)}`).toBe(true);
      }
    }
    // What the handler needs, the document requires.
    const book = op('GET', '/v1/orderbook')['parameters'] as Json[];
    for (const name of ['gpu_type', 'zone']) {
      expect(
        book.find((p) => p['name'] === name),
        name,
      ).toMatchObject({ required: true });
    }
  });

  it('speaks its reader’s language: no decision number, no pointer to a document outside the repository', () => {
    const text = JSON.stringify(doc);
    const cited = (re: RegExp): string[] =>
      [...text.matchAll(re)].map((m) => text.slice(Math.max(0, m.index - 60), m.index + 20));
    expect(cited(/\bD\d{1,2}\b/g)).toEqual([]);
    expect(cited(/spec rule|service spec|decisions\.md/g)).toEqual([]);
  });

  it('has no dangling $ref and unique operation ids', () => {
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1] ?? '');
    expect(refs.length).toBeGreaterThan(0);
    for (const reference of refs) expect(resolve(reference), reference).toBeDefined();
    const ids = routes.map((r) => op(r.method, r.url)['operationId']);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('is the checked-in docs/api/openapi.json (run npm run gen after changing a route)', () => {
    const file = new URL('../../docs/api/openapi.json', import.meta.url);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(doc);
  });
});
