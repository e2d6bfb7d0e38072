// The OpenAPI 3.1 document of the HTTP API, served at GET /v1/openapi.json.
//
// Built from the JSON Schemas each route already declares for validation
// (`schema: { body, querystring, params, response }`), collected by an onRoute
// hook, so the published contract and the checks the server makes are the
// same objects and cannot drift apart. What a schema cannot say (the success
// status, the error statuses a route can answer with) is derived from the
// route's method and path plus the small tables below.

import { ERROR_CODES } from '@gpux/shared';
import type { ErrorCode } from '@gpux/shared';
import type { FastifyInstance, FastifySchema } from 'fastify';

export const OPENAPI_PATH = '/v1/openapi.json';

/** The version of the API (the `/v1` path segment), not of the package. */
export const API_VERSION = '1.0.0';

export type JsonSchema = Record<string, unknown>;

export interface RouteRecord {
  /** Upper case, e.g. `GET`. */
  readonly method: string;
  /** Fastify's form, e.g. `/v1/orders/:id`. */
  readonly url: string;
  readonly schema: FastifySchema | undefined;
}

export interface OpenApiParameter {
  readonly name: string;
  readonly in: 'query' | 'path' | 'header';
  readonly required: boolean;
  readonly description?: string;
  readonly schema: JsonSchema;
}

export interface OpenApiRef {
  readonly $ref: string;
}

export interface OpenApiMediaType {
  readonly schema: JsonSchema;
}

export interface OpenApiResponse {
  readonly description: string;
  readonly headers?: Record<string, OpenApiRef>;
  readonly content?: Record<string, OpenApiMediaType>;
}

export interface OpenApiOperation {
  readonly operationId: string;
  readonly tags: string[];
  readonly summary?: string;
  readonly description?: string;
  readonly security?: Record<string, string[]>[];
  readonly parameters?: (OpenApiParameter | OpenApiRef)[];
  readonly requestBody?: {
    readonly required: boolean;
    readonly content: Record<string, OpenApiMediaType>;
  };
  readonly responses: Record<string, OpenApiResponse | OpenApiRef>;
}

export type HttpMethodKey = 'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch';
export type OpenApiPathItem = Partial<Record<HttpMethodKey, OpenApiOperation>>;

export interface OpenApiDocument {
  readonly openapi: '3.1.0';
  readonly info: { readonly title: string; readonly version: string; readonly description: string };
  readonly servers: { readonly url: string; readonly description: string }[];
  readonly security: Record<string, string[]>[];
  readonly paths: Record<string, OpenApiPathItem>;
  readonly components: {
    readonly securitySchemes: Record<string, JsonSchema>;
    readonly schemas: Record<string, JsonSchema>;
    readonly responses: Record<string, OpenApiResponse>;
    readonly parameters: Record<string, OpenApiParameter>;
    readonly headers: Record<string, JsonSchema>;
  };
}

/** Routes that answer 201 rather than 200 (their handlers call reply.code(201)). */
const CREATED = new Set([
  'POST /v1/admin/accounts',
  'POST /v1/admin/clusters',
  'POST /v1/ssh_keys',
]);

/** Routes whose success body is not JSON. */
const MEDIA_TYPES: Readonly<Record<string, { type: string; schema: JsonSchema }>> = {
  // D28: a kubeconfig file.
  'GET /v1/leases/:id/kubeconfig': { type: 'application/yaml', schema: { type: 'string' } },
};

/**
 * Error statuses a route can answer with beyond those its method and path
 * imply (see errorStatusesOf): the book's and the lease's refusals.
 */
const EXTRA_ERROR_STATUSES: Readonly<Record<string, readonly number[]>> = {
  // insufficient_funds (D3); insufficient_liquidity, self_trade_prevented, insufficient_capacity.
  'POST /v1/orders': [402, 409],
  // order_already_filled
  'DELETE /v1/orders/:id': [409],
  // lease_not_active
  'DELETE /v1/leases/:id': [409],
  'POST /v1/leases/:id/resell': [409],
  // lease_not_ready
  'GET /v1/leases/:id/kubeconfig': [409],
};

/** Served without a token. */
const PUBLIC_ROUTES = new Set(['GET /healthz', `GET ${OPENAPI_PATH}`]);

const ERROR_REF = '#/components/schemas/Error';

type Access = 'public' | 'admin' | 'customer';

function accessOf(method: string, url: string): Access {
  if (PUBLIC_ROUTES.has(`${method} ${url}`)) return 'public';
  return url.startsWith('/v1/admin/') ? 'admin' : 'customer';
}

/**
 * Records every route registered on `app` from now on (Fastify runs onRoute
 * hooks as each route is added), so call it before the routes. The HEAD
 * routes Fastify adds beside each GET are left out.
 */
export function recordRoutes(app: FastifyInstance): RouteRecord[] {
  const routes: RouteRecord[] = [];
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      const m = method.toUpperCase();
      if (m === 'HEAD') continue;
      routes.push({ method: m, url: route.url, schema: route.schema });
    }
  });
  return routes;
}

/**
 * Records the routes registered after it and serves their document at
 * GET /v1/openapi.json (no token needed; it is built once, at the first
 * request, when every route is known).
 */
export function openApiRoute(app: FastifyInstance): void {
  const routes = recordRoutes(app);
  let doc: OpenApiDocument | undefined;
  app.get(OPENAPI_PATH, () => {
    doc ??= buildOpenApiDocument(routes);
    return doc;
  });
}

/** `/v1/leases/:id/resell` → `/v1/leases/{id}/resell`; also the names of its parameters. */
export function openApiPath(url: string): { path: string; params: string[] } {
  const params: string[] = [];
  const path = url
    .split('/')
    .map((segment) => {
      if (segment === '*') {
        params.push('wildcard');
        return '{wildcard}';
      }
      // `:name` or `:name(regex)`; Fastify's `::` is a literal colon.
      const m = /^:([A-Za-z0-9_]+)(\(.*\))?$/.exec(segment);
      if (m?.[1] === undefined) return segment.replaceAll('::', ':');
      params.push(m[1]);
      return `{${m[1]}}`;
    })
    .join('/');
  return { path, params };
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** A deep copy: the route's schema objects are also ajv's and must not be shared or changed. */
function copy(schema: unknown): JsonSchema {
  return JSON.parse(JSON.stringify(schema)) as JsonSchema;
}

function parametersOf(
  where: 'query' | 'path',
  schema: unknown,
  pathParams: readonly string[],
): OpenApiParameter[] {
  const properties = isObject(schema) && isObject(schema['properties']) ? schema['properties'] : {};
  const required = isObject(schema) && Array.isArray(schema['required']) ? schema['required'] : [];
  const names = where === 'path' ? pathParams : Object.keys(properties);
  return names.map((name) => {
    const s = copy(properties[name] ?? { type: 'string' });
    const description = typeof s['description'] === 'string' ? s['description'] : undefined;
    return {
      name,
      in: where,
      // A path parameter is always required (OpenAPI); `default` stays in its schema.
      required: where === 'path' || required.includes(name),
      ...(description === undefined ? {} : { description }),
      schema: s,
    };
  });
}

function errorStatusesOf(method: string, url: string, schema: FastifySchema | undefined): number[] {
  const access = accessOf(method, url);
  const statuses = new Set<number>();
  const writes = method === 'POST' || method === 'DELETE';
  const hasInput =
    schema?.body !== undefined || schema?.querystring !== undefined || schema?.params !== undefined;
  // Idempotency-Key is checked on a customer's POST and DELETE (D23).
  if (hasInput || (access === 'customer' && writes)) statuses.add(400);
  if (access !== 'public') statuses.add(401);
  if (access === 'customer') statuses.add(403);
  if (url.includes(':')) statuses.add(404);
  if (schema?.body !== undefined) statuses.add(413);
  if (access === 'customer' && writes) {
    statuses.add(409); // idempotency_key_in_progress
    statuses.add(422); // idempotency_key_reused
  }
  if (access === 'customer') statuses.add(429);
  for (const s of EXTRA_ERROR_STATUSES[`${method} ${url}`] ?? []) statuses.add(s);
  statuses.add(500);
  return [...statuses].sort((a, b) => a - b);
}

/** Success responses: the route's `schema.response` when it declares one, else a generic object. */
function successResponses(
  method: string,
  url: string,
  schema: FastifySchema | undefined,
  headers: Record<string, OpenApiRef>,
): Record<string, OpenApiResponse> {
  const key = `${method} ${url}`;
  const withHeaders = Object.keys(headers).length === 0 ? {} : { headers };
  if (isObject(schema?.response)) {
    const out: Record<string, OpenApiResponse> = {};
    for (const [status, declared] of Object.entries(schema.response)) {
      const description =
        isObject(declared) && typeof declared['description'] === 'string'
          ? declared['description']
          : 'Success';
      // Fastify also takes `{ content: { '<media type>': { schema } } }` per status.
      const content =
        isObject(declared) && isObject(declared['content'])
          ? (copy(declared['content']) as Record<string, OpenApiMediaType>)
          : { 'application/json': { schema: copy(declared) } };
      out[status] = { description, ...withHeaders, content };
    }
    return out;
  }
  const media = MEDIA_TYPES[key] ?? { type: 'application/json', schema: { type: 'object' } };
  const status = CREATED.has(key) ? '201' : '200';
  return {
    [status]: {
      description: status === '201' ? 'Created' : 'Success',
      ...withHeaders,
      content: { [media.type]: { schema: media.schema } },
    },
  };
}

/** `GET /v1/leases/{id}/kubeconfig` → `getLeasesByIdKubeconfig`. */
function operationIdOf(method: string, path: string): string {
  const words = path
    .split('/')
    .filter((s) => s !== '' && s !== 'v1')
    .map((s) => (s.startsWith('{') ? `by_${s.slice(1, -1)}` : s))
    .join('_')
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => w !== '');
  return [method.toLowerCase(), ...words.map((w) => w[0]?.toUpperCase() + w.slice(1))].join('');
}

function tagOf(url: string): string {
  const [, first, second] = url.split('/');
  if (first !== 'v1') return 'service';
  return second === 'admin' ? 'admin' : (second ?? 'service');
}

function stringOf(schema: FastifySchema | undefined, key: string): string | undefined {
  const value = (schema as Record<string, unknown> | undefined)?.[key];
  return typeof value === 'string' ? value : undefined;
}

function operationOf(route: RouteRecord): { path: string; operation: OpenApiOperation } {
  const { method, url, schema } = route;
  const { path, params } = openApiPath(url);
  const access = accessOf(method, url);
  const writes = method === 'POST' || method === 'DELETE';
  const parameters: (OpenApiParameter | OpenApiRef)[] = [
    ...parametersOf('path', schema?.params, params),
    ...(schema?.querystring === undefined ? [] : parametersOf('query', schema.querystring, [])),
    ...(access === 'customer' && writes
      ? [{ $ref: '#/components/parameters/IdempotencyKey' }]
      : []),
  ];
  const rateHeaders: Record<string, OpenApiRef> =
    access === 'customer'
      ? {
          'X-RateLimit-Limit': { $ref: '#/components/headers/X-RateLimit-Limit' },
          'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
          'X-RateLimit-Reset': { $ref: '#/components/headers/X-RateLimit-Reset' },
        }
      : {};
  const responses: Record<string, OpenApiResponse | OpenApiRef> = {
    ...successResponses(method, url, schema, rateHeaders),
  };
  for (const status of errorStatusesOf(method, url, schema)) {
    responses[String(status)] = { $ref: `#/components/responses/Error${status}` };
  }
  const summary = stringOf(schema, 'summary');
  const description = stringOf(schema, 'description');
  const operation: OpenApiOperation = {
    operationId: stringOf(schema, 'operationId') ?? operationIdOf(method, path),
    tags: [tagOf(url)],
    ...(summary === undefined ? {} : { summary }),
    ...(description === undefined ? {} : { description }),
    ...(access === 'public' ? { security: [] } : {}),
    ...(parameters.length === 0 ? {} : { parameters }),
    ...(schema?.body === undefined
      ? {}
      : {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: copy(schema.body) } },
          },
        }),
    responses,
  };
  return { path, operation };
}

/** The D19 error envelope, with every code of the catalogue. */
function errorSchema(): JsonSchema {
  return {
    type: 'object',
    description: 'D19: every error answers with this envelope (docs/api/errors.md).',
    required: ['data', 'error'],
    properties: {
      data: { type: 'null' },
      error: {
        type: 'object',
        required: ['code', 'message'],
        // Some codes carry extra fields beside code and message.
        additionalProperties: true,
        properties: {
          code: {
            type: 'string',
            enum: Object.keys(ERROR_CODES),
            description: 'Stable, for programs.',
          },
          message: { type: 'string', description: 'For people; may change.' },
          missing_gpus: {
            type: 'integer',
            description: 'insufficient_liquidity: the GPUs that could not be filled.',
          },
          field: {
            type: 'string',
            description: 'The request field a money amount was refused in.',
          },
        },
      },
    },
  };
}

/** One shared response per HTTP status of the catalogue, its `code` narrowed to that status. */
function errorResponses(): Record<string, OpenApiResponse> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const [code, entry] of Object.entries(ERROR_CODES) as [ErrorCode, { status: number }][]) {
    byStatus.set(entry.status, [...(byStatus.get(entry.status) ?? []), code]);
  }
  const out: Record<string, OpenApiResponse> = {};
  for (const [status, codes] of byStatus) {
    out[`Error${status}`] = {
      description: `Error: ${codes.map((c) => `\`${c}\``).join(', ')}`,
      ...(status === 429
        ? {
            headers: {
              'Retry-After': { $ref: '#/components/headers/Retry-After' },
              'X-RateLimit-Limit': { $ref: '#/components/headers/X-RateLimit-Limit' },
              'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
              'X-RateLimit-Reset': { $ref: '#/components/headers/X-RateLimit-Reset' },
            },
          }
        : {}),
      content: {
        'application/json': {
          schema: {
            allOf: [
              { $ref: ERROR_REF },
              { properties: { error: { properties: { code: { enum: codes } } } } },
            ],
          },
        },
      },
    };
  }
  return out;
}

function intHeader(description: string): JsonSchema {
  return { description, schema: { type: 'integer', minimum: 0 } };
}

export function buildOpenApiDocument(routes: readonly RouteRecord[]): OpenApiDocument {
  const paths: Record<string, OpenApiPathItem> = {};
  const sorted = [...routes].sort((a, b) =>
    a.url === b.url ? a.method.localeCompare(b.method) : a.url.localeCompare(b.url),
  );
  for (const route of sorted) {
    const { path, operation } = operationOf(route);
    const item = (paths[path] ??= {});
    item[route.method.toLowerCase() as HttpMethodKey] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'gpux exchange',
      version: API_VERSION,
      description:
        'The gpux GPU compute marketplace API. Success bodies are the bare resource; ' +
        'errors are `{"data": null, "error": {"code", "message"}}` (D19) with the codes ' +
        'of docs/api/errors.md. Customer requests are rate limited per account (D18).',
    },
    servers: [{ url: '/', description: 'the exchange serving this document' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An API token (D24), or the operators\u2019 admin token for /v1/admin/*. ' +
            'Missing or unknown: 401 unauthorized; lacking the scope: 403 forbidden.',
        },
      },
      schemas: { Error: errorSchema() },
      responses: errorResponses(),
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'D23: kept 24 h per account; the same key with the same request replays the first answer.',
          schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
        },
      },
      headers: {
        'X-RateLimit-Limit': intHeader('Requests of this kind allowed per minute (D18).'),
        'X-RateLimit-Remaining': intHeader('Requests of this kind left in the current minute.'),
        'X-RateLimit-Reset': intHeader('Seconds until the window frees a slot.'),
        'Retry-After': intHeader('Seconds to wait before retrying.'),
      },
    },
  };
}
