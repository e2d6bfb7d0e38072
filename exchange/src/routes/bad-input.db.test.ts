// Bad input on every endpoint (issue: "malformed JSON, wrong types, huge
// numbers, negative or fractional counts and prices, unknown enum values,
// overlong strings, missing auth, wrong content type — each gives a 4xx with
// a documented code; none gives a 500"). Each answer must be a 4xx in the D19
// envelope, with a code of the catalogue whose status is the HTTP status, and
// must disclose nothing of the server (no stack frames, no file paths). And
// none of the requests may change anything.

import { ERROR_CODES, FIELD_RULES, isErrorCode } from '@gpux/shared';
import type { ErrorCode } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { Party, TestExchange } from '../market/testing/test-exchange.js';
import { guardSerialization } from '../http/testing/serialization-guard.js';
import type { SerializationGuard } from '../http/testing/serialization-guard.js';
import { CLUSTER_BODY_LIMIT_BYTES } from './clusters.js';

let ex: TestExchange;
let provider: Party;
let buyer: Party;
const tokens = new Map<Who, string>();
let leaseId: string;
let orderId: string;

/** Who calls: a token with every customer scope, one lacking the route's scope, none, ... */
type Who =
  | 'buyer'
  | 'readOnly'
  | 'tradeOnly'
  | 'providerOnly'
  | 'admin'
  | 'none'
  | 'basic'
  | 'unknownToken'
  | 'emptyBearer'
  | 'hugeToken';

let guard: SerializationGuard;

beforeAll(async () => {
  ex = await testExchange();
  // Every answer must serialize to exactly its view (http/testing/serialization-guard.ts).
  guard = guardSerialization(ex.app);
  provider = await ex.account('provider');
  buyer = await ex.account('buyer');
  await ex.cluster(provider, 2);
  const sell = await ex.call('POST', '/v1/orders', provider.token, {
    side: 'sell',
    gpu_type: 'h100',
    zone: 'us-west-1',
    gpu_count: 16,
    duration_hours: 48,
    limit_price: 2,
  });
  expect(sell.status).toBe(200);
  const buy = await ex.call('POST', '/v1/orders', buyer.token, {
    side: 'buy',
    gpu_type: 'h100',
    zone: 'us-west-1',
    gpu_count: 8,
    duration_hours: 10,
  });
  expect(buy.json['status']).toBe('filled');
  leaseId = buy.json['lease_id'] as string;
  orderId = buy.json['order_id'] as string;
  // The agent reports it provisioned (D25): only an active lease is resold (D27).
  await ex.market
    .writer('h100', 'us-west-1')
    .submit((state, changes) => state.leaseReady(leaseId, ex.clock.now(), changes));
  tokens.set('buyer', buyer.token);
  tokens.set('readOnly', (await ex.account('reader', { scopes: ['read'] })).token);
  tokens.set('tradeOnly', (await ex.account('trader', { scopes: ['trade'] })).token);
  tokens.set('providerOnly', (await ex.account('agent', { scopes: ['provider'] })).token);
});

afterAll(async () => {
  expect(guard.mismatches).toEqual([]);
  await ex?.close();
});

// ---------------------------------------------------------------------------
// The cases

interface Case {
  readonly name: string;
  readonly method: 'GET' | 'POST' | 'DELETE' | 'PATCH';
  /** `{lease}` and `{order}` stand for the lease and order made in beforeAll. */
  readonly url: string;
  readonly who?: Who;
  /** Sent as JSON with Content-Type application/json (unless contentType says otherwise). */
  readonly body?: unknown;
  /** Sent as is. */
  readonly raw?: string;
  /** null: no Content-Type header at all. */
  readonly contentType?: string | null;
  readonly headers?: Readonly<Record<string, string>>;
  readonly status: number;
  /** Defaults to the one code of that status (invalid_request for 400). */
  readonly code?: ErrorCode;
}

const DEFAULT_CODE: Readonly<Record<number, ErrorCode>> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  413: 'payload_too_large',
};

/** A field left out of a body (JSON.stringify drops symbol-valued properties). */
const OMIT = Symbol('omit');

/** A number written literally in the JSON text, as a client could send it. */
class Literal {
  constructor(
    readonly field: string,
    readonly text: string,
  ) {}
}
const lit = (field: string, text: string): Literal => new Literal(field, text);

type Variant = readonly [name: string, change: Readonly<Record<string, unknown>> | Literal];

const LONG = 'x'.repeat(10_000);
const OVER_64_KIB = JSON.stringify({ pad: 'x'.repeat(64 * 1024 + 1) });
const KEY_LINE =
  'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@laptop';

/** Body variants of a valid `base`: one field changed, added or left out each. */
function bodyCases(
  method: Case['method'],
  url: string,
  base: Readonly<Record<string, unknown>>,
  variants: readonly Variant[],
  who: Who = 'buyer',
): Case[] {
  return variants.map(([name, change]) => {
    if (change instanceof Literal) {
      const mark = '\u0001literal\u0001';
      const text = JSON.stringify({ ...base, [change.field]: mark });
      return {
        name,
        method,
        url,
        who,
        raw: text.replace(JSON.stringify(mark), change.text),
        status: 400,
      };
    }
    return { name, method, url, who, body: { ...base, ...change }, status: 400 };
  });
}

/**
 * The body is not a JSON object, or not JSON, or too large (`limitBytes`:
 * the route's own limit, D20's 64 KiB unless it takes more).
 */
function bodyShapeCases(
  method: Case['method'],
  url: string,
  who: Who = 'buyer',
  limitBytes = 64 * 1024,
): Case[] {
  const over = JSON.stringify({ pad: 'x'.repeat(limitBytes + 1) });
  const size = limitBytes === 64 * 1024 ? '64 KiB' : `${limitBytes / 1024} KiB`;
  const c = (name: string, extra: Partial<Case>): Case => ({
    name,
    method,
    url,
    who,
    status: 400,
    ...extra,
  });
  return [
    c('malformed JSON', { raw: '{"side":' }),
    c('truncated JSON string', { raw: '{"name":"abc' }),
    c('a JSON array', { raw: '[]' }),
    c('a JSON array of objects', { raw: '[{"limit_price":2}]' }),
    c('a JSON string', { raw: '"buy"' }),
    c('JSON null', { raw: 'null' }),
    c('a JSON number', { raw: '42' }),
    c('JSON true', { raw: 'true' }),
    c('an empty body with Content-Type application/json', { raw: '' }),
    c('__proto__ in the body', { raw: '{"__proto__":{"admin":true}}' }),
    c('Content-Type text/plain', { raw: '{"limit_price":2}', contentType: 'text/plain' }),
    c('no Content-Type with a body', { raw: '{"limit_price":2}', contentType: null }),
    c('Content-Type form-urlencoded', {
      raw: 'limit_price=2',
      contentType: 'application/x-www-form-urlencoded',
    }),
    c('Content-Type application/xml', { raw: '<order/>', contentType: 'application/xml' }),
    c(`a body over ${size}`, { raw: over, status: 413 }),
    // Authentication is answered before the body is read (docs/api/errors.md).
    c(`a body over ${size}, without a token`, { raw: over, who: 'none', status: 401 }),
  ];
}

/** 401 without a valid token; 403 with a valid one lacking the route's scope. */
function authCases(method: Case['method'], url: string, scopeless: Who | null): Case[] {
  const c = (name: string, who: Who, status: number): Case => ({
    name,
    method,
    url,
    who,
    status,
  });
  return [
    c('no Authorization header', 'none', 401),
    c('Authorization: Basic', 'basic', 401),
    c('an unknown token', 'unknownToken', 401),
    c('Bearer without a token', 'emptyBearer', 401),
    c('a 10,000-character token', 'hugeToken', 401),
    ...(scopeless === null ? [] : [c('a token without the scope', scopeless, 403)]),
  ];
}

/** A path id that is too long, has a NUL, is not UTF-8, or names nothing. */
function idCases(method: Case['method'], template: string, who: Who = 'buyer'): Case[] {
  const at = (id: string): string => template.replace('{id}', id);
  const c = (name: string, url: string, status: number): Case => ({
    name,
    method,
    url,
    who,
    status,
  });
  return [
    c('a 5,000-character id', at('x'.repeat(5_000)), 400),
    c('a 65-character id', at('x'.repeat(65)), 400),
    c('an id with a NUL byte', at('ord_%00x'), 400),
    c('an id with bad percent-encoding', at('%E0%A4%A'), 400),
    c('an id that is not UTF-8', at('%FF'), 400),
    c('an unknown id', at('zzz_01unknown'), 404),
  ];
}

/** Query strings that break the route's querystring schema. */
function queryCases(
  url: string,
  base: string,
  variants: readonly (readonly [string, string])[],
): Case[] {
  return variants.map(([name, query]) => ({
    name,
    method: 'GET',
    url: `${url}?${[base, query].filter((q) => q !== '').join('&')}`,
    who: 'buyer',
    status: 400,
  }));
}

const PAGING: readonly (readonly [string, string])[] = [
  ['limit=101', 'limit=101'],
  ['limit=0', 'limit=0'],
  ['limit=-1', 'limit=-1'],
  ['limit=2.5', 'limit=2.5'],
  ['limit=abc', 'limit=abc'],
  ['limit empty', 'limit='],
  ['limit=1e400 (Infinity)', 'limit=1e400'],
  ['limit=Infinity', 'limit=Infinity'],
  ['limit=NaN', 'limit=NaN'],
  ['limit twice', 'limit=1&limit=2'],
  ['offset=-1', 'offset=-1'],
  ['offset=1.5', 'offset=1.5'],
  ['offset=1e20', 'offset=1e20'],
  ['offset=Infinity', 'offset=Infinity'],
  ['an unknown parameter', 'colour=red'],
  ['__proto__ as a parameter', '__proto__=1'],
];

const ORDER = {
  side: 'buy',
  gpu_type: 'h100',
  gpu_count: 8,
  zone: 'us-west-1',
  duration_hours: 10,
  order_type: 'limit',
  limit_price: 1,
};

const ORDER_VARIANTS: readonly Variant[] = [
  // wrong types
  ['gpu_count as a string "16"', { gpu_count: '16' }],
  ['duration_hours as a string "10"', { duration_hours: '10' }],
  ['limit_price as a string "2.00"', { limit_price: '2.00' }],
  ['gpu_type as a number', { gpu_type: 100 }],
  ['side as a boolean', { side: true }],
  ['zone null', { zone: null }],
  ['gpu_count as an array', { gpu_count: [8] }],
  ['gpu_count as an object', { gpu_count: { value: 8 } }],
  ['allow_partial as a string', { allow_partial: 'yes' }],
  ['start_time as a number', { start_time: 1_795_000_000 }],
  // fractional and negative counts and prices
  ['gpu_count 8.5', { gpu_count: 8.5 }],
  ['duration_hours 1.5', { duration_hours: 1.5 }],
  ['flexible_window_hours 2.5', { flexible_window_hours: 2.5 }],
  ['gpu_count -8', { gpu_count: -8 }],
  ['gpu_count 0', { gpu_count: 0 }],
  ['gpu_count 12 (not whole nodes)', { gpu_count: 12 }],
  ['duration_hours -1', { duration_hours: -1 }],
  ['duration_hours 0', { duration_hours: 0 }],
  ['duration_hours 721', { duration_hours: 721 }],
  ['flexible_window_hours -1', { flexible_window_hours: -1 }],
  ['limit_price -2', { limit_price: -2 }],
  ['limit_price 0', { limit_price: 0 }],
  ['limit_price 1.234 (3 decimals)', { limit_price: 1.234 }],
  ['limit_price 0.001', { limit_price: 0.001 }],
  ['limit_price 1e-7', { limit_price: 1e-7 }],
  // huge numbers, written literally in the JSON text
  ['gpu_count 1e308', lit('gpu_count', '1e308')],
  ['gpu_count 2^60', lit('gpu_count', String(2 ** 60))],
  ['gpu_count MAX_SAFE_INTEGER + 2', lit('gpu_count', '9007199254740993')],
  ['duration_hours 1e308', lit('duration_hours', '1e308')],
  ['limit_price 1e308', lit('limit_price', '1e308')],
  ['limit_price 1e999 (Infinity)', lit('limit_price', '1e999')],
  ['limit_price 2^60', lit('limit_price', String(2 ** 60))],
  ['limit_price MAX_SAFE_INTEGER + 2', lit('limit_price', '9007199254740993')],
  ['limit_price -1e308', lit('limit_price', '-1e308')],
  // unknown enum values
  ['gpu_type "a100"', { gpu_type: 'a100' }],
  ['gpu_type "H100" (case)', { gpu_type: 'H100' }],
  ['zone "mars-1"', { zone: 'mars-1' }],
  ['side "hold"', { side: 'hold' }],
  ['order_type "stop"', { order_type: 'stop' }],
  // overlong and malformed strings
  ['start_time of 10,000 characters', { start_time: LONG }],
  ['start_time "tomorrow"', { start_time: 'tomorrow' }],
  ['start_time "2026-13-45T00:00:00Z"', { start_time: '2026-13-45T00:00:00Z' }],
  ['start_time without a time', { start_time: '2026-11-22' }],
  ['start_time without a zone', { start_time: '2026-11-22T10:00:00' }],
  ['start_time more than 720 h ahead', { start_time: '9999-12-31T23:59:59Z' }],
  ['cluster_id of 10,000 characters', { cluster_id: LONG }],
  // unknown and missing fields
  ['an unknown field', { colour: 'red' }],
  ['a misspelt field', { gpucount: 8 }],
  ['side missing', { side: OMIT }],
  ['gpu_type missing', { gpu_type: OMIT }],
  ['gpu_count missing', { gpu_count: OMIT }],
  ['zone missing', { zone: OMIT }],
  ['duration_hours missing', { duration_hours: OMIT }],
  ['a limit order without limit_price', { limit_price: OMIT }],
  ['a market order with a limit_price', { order_type: 'market' }],
  ['a buy with a cluster_id', { cluster_id: 'cls_x' }],
];

const RESELL = { limit_price: 2 };

const RESELL_VARIANTS: readonly Variant[] = [
  ['limit_price as a string "2"', { limit_price: '2' }],
  ['limit_price null', { limit_price: null }],
  ['limit_price -2', { limit_price: -2 }],
  ['limit_price 0', { limit_price: 0 }],
  ['limit_price 1.234', { limit_price: 1.234 }],
  ['limit_price 1e308', lit('limit_price', '1e308')],
  ['limit_price 2^60', lit('limit_price', String(2 ** 60))],
  ['limit_price MAX_SAFE_INTEGER + 2', lit('limit_price', '9007199254740993')],
  ['limit_price missing', { limit_price: OMIT }],
  ['transfer_immediately as a string', { transfer_immediately: 'yes' }],
  ['available_from "tomorrow"', { available_from: 'tomorrow' }],
  ['available_from "2026-13-45T00:00:00Z"', { available_from: '2026-13-45T00:00:00Z' }],
  ['available_from of 10,000 characters', { available_from: LONG }],
  ['available_until as a number', { available_until: 0 }],
  ['available_until before now', { available_until: '1970-01-01T00:00:00Z' }],
  ['available_until after the lease ends', { available_until: '2030-01-01T00:00:00Z' }],
  ['an unknown field', { colour: 'red' }],
];

const SSH_KEY = { name: 'laptop', public_key: KEY_LINE };

const SSH_KEY_VARIANTS: readonly Variant[] = [
  ['name missing', { name: OMIT }],
  ['public_key missing', { public_key: OMIT }],
  ['name empty', { name: '' }],
  ['name of 101 characters', { name: 'n'.repeat(101) }],
  ['name as a number', { name: 7 }],
  ['name with a NUL', { name: 'lap\u0000top' }],
  ['public_key of 20,000 characters', { public_key: `ssh-ed25519 ${'A'.repeat(20_000)}` }],
  ['public_key that is not a key', { public_key: 'hello' }],
  ['public_key of a refused type', { public_key: 'ssh-dss AAAAB3NzaC1kc3MAAACBAP' }],
  ['public_key not base64', { public_key: 'ssh-ed25519 !!!!' }],
  ['a private key', { public_key: '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=' }],
  ['an unknown field', { colour: 'red' }],
];

const ACCOUNT = { name: 'newcomer', organization: 'newcomer', scopes: ['read'] };

const ACCOUNT_VARIANTS: readonly Variant[] = [
  ['scopes as a string', { scopes: 'read' }],
  ['scopes empty', { scopes: [] }],
  ['an unknown scope', { scopes: ['root'] }],
  ['a scope twice', { scopes: ['read', 'read'] }],
  ['name empty', { name: '' }],
  ['name of 10,000 characters', { name: LONG }],
  ['name with a NUL', { name: 'new\u0000comer' }],
  ['organization with a NUL', { organization: 'org\u0000' }],
  ['organization missing', { organization: OMIT }],
  ['credit_limit as a string', { credit_limit: '100' }],
  ['credit_limit -1', { credit_limit: -1 }],
  ['credit_limit 1.234', { credit_limit: 1.234 }],
  ['credit_limit 1e308', lit('credit_limit', '1e308')],
  ['credit_limit MAX_SAFE_INTEGER + 2', lit('credit_limit', '9007199254740993')],
  ['an unknown field', { colour: 'red' }],
];

const CLUSTER = {
  provider_account_id: 'acc_unknown',
  gpu_type: 'h100',
  zone: 'us-west-1',
  nodes: [{ hostname: 'node-1.example' }],
};

const CLUSTER_VARIANTS: readonly Variant[] = [
  ['an unknown provider account', {}],
  ['provider_account_id with a NUL', { provider_account_id: 'acc_\u0000' }],
  ['provider_account_id of 10,000 characters', { provider_account_id: LONG }],
  ['gpu_type "a100"', { gpu_type: 'a100' }],
  ['zone "mars-1"', { zone: 'mars-1' }],
  ['no nodes', { nodes: [] }],
  ['1,001 nodes', { nodes: Array.from({ length: 1001 }, (_, i) => ({ hostname: `n${i}` })) }],
  ['a hostname with a space', { nodes: [{ hostname: 'bad host' }] }],
  [
    'a hostname of 255 characters',
    { nodes: [{ hostname: Array(4).fill('a'.repeat(63)).join('.') }] },
  ],
  ['a hostname twice', { nodes: [{ hostname: 'a.example' }, { hostname: 'A.example' }] }],
  ['a node with an unknown field', { nodes: [{ hostname: 'a.example', gpus: 8 }] }],
  ['nodes as an object', { nodes: { hostname: 'a.example' } }],
  ['an unknown field', { colour: 'red' }],
];

const MARKET = 'gpu_type=h100&zone=us-west-1';

const CASES: readonly Case[] = [
  // POST /v1/orders
  ...authCases('POST', '/v1/orders', 'readOnly'),
  // The token is checked before the body is read, so a stranger learns
  // nothing of the schema, and not even whether its body is JSON.
  {
    name: 'no token and a body that breaks the schema',
    method: 'POST',
    url: '/v1/orders',
    who: 'none',
    body: { side: 'hold' },
    status: 401,
  },
  {
    name: 'no token and a body that is not JSON',
    method: 'POST',
    url: '/v1/orders',
    who: 'none',
    raw: '{',
    status: 401,
  },
  ...bodyShapeCases('POST', '/v1/orders'),
  ...bodyCases('POST', '/v1/orders', ORDER, ORDER_VARIANTS),
  {
    name: 'an Idempotency-Key of 300 characters',
    method: 'POST',
    url: '/v1/orders',
    body: ORDER,
    headers: { 'idempotency-key': 'k'.repeat(300) },
    status: 400,
  },
  {
    name: 'an Idempotency-Key with a space',
    method: 'POST',
    url: '/v1/orders',
    body: ORDER,
    headers: { 'idempotency-key': 'a b' },
    status: 400,
  },

  // GET /v1/orders
  ...authCases('GET', '/v1/orders', 'tradeOnly'),
  ...queryCases('/v1/orders', '', [
    ['status "open"', 'status=open'],
    ['side "hold"', 'side=hold'],
    ['status of 10,000 characters', `status=${LONG}`],
    ...PAGING,
  ]),

  // GET and DELETE /v1/orders/{id}
  ...authCases('GET', '/v1/orders/{order}', 'tradeOnly'),
  ...idCases('GET', '/v1/orders/{id}'),
  ...authCases('DELETE', '/v1/orders/{order}', 'readOnly'),
  ...idCases('DELETE', '/v1/orders/{id}'),
  {
    name: 'malformed JSON body',
    method: 'DELETE',
    url: '/v1/orders/{order}',
    raw: '{"a":',
    status: 400,
  },
  {
    name: 'a body over 64 KiB',
    method: 'DELETE',
    url: '/v1/orders/{order}',
    raw: OVER_64_KIB,
    status: 413,
  },
  {
    name: 'an Idempotency-Key of 300 characters',
    method: 'DELETE',
    url: '/v1/orders/{order}',
    headers: { 'idempotency-key': 'k'.repeat(300) },
    status: 400,
  },
  {
    name: 'cancelling a filled order',
    method: 'DELETE',
    url: '/v1/orders/{order}',
    status: 409,
    code: 'order_already_filled',
  },

  // GET /v1/orderbook
  ...authCases('GET', `/v1/orderbook?${MARKET}`, 'tradeOnly'),
  ...queryCases('/v1/orderbook', '', [
    ['zone missing', 'gpu_type=h100'],
    ['gpu_type missing', 'zone=us-west-1'],
    ['gpu_type "a100"', 'gpu_type=a100&zone=us-west-1'],
    ['zone "mars-1"', 'gpu_type=h100&zone=mars-1'],
    ['instance_type "8xa100"', 'instance_type=8xa100&zone=us-west-1'],
    ['instance_type of 10,000 characters', `instance_type=${LONG}&zone=us-west-1`],
    ['instance_type and gpu_type disagree', 'instance_type=8xh200&gpu_type=h100&zone=us-west-1'],
  ]),
  ...queryCases('/v1/orderbook', MARKET, [
    ['depth=51', 'depth=51'],
    ['depth=0', 'depth=0'],
    ['depth=-1', 'depth=-1'],
    ['depth=2.5', 'depth=2.5'],
    ['depth=abc', 'depth=abc'],
    ['depth=Infinity', 'depth=Infinity'],
    ['depth=1e400', 'depth=1e400'],
    ['an unknown parameter', 'colour=red'],
  ]),

  // GET /v1/prices/estimate
  ...authCases('GET', `/v1/prices/estimate?${MARKET}&gpu_count=8`, 'tradeOnly'),
  ...queryCases('/v1/prices/estimate', MARKET, [
    ['gpu_count missing', ''],
    ['gpu_count=12', 'gpu_count=12'],
    ['gpu_count=8.5', 'gpu_count=8.5'],
    ['gpu_count=-8', 'gpu_count=-8'],
    ['gpu_count=0', 'gpu_count=0'],
    ['gpu_count=1e308', 'gpu_count=1e308'],
    ['gpu_count=Infinity', 'gpu_count=Infinity'],
    ['gpu_count=-Infinity', 'gpu_count=-Infinity'],
    ['gpu_count=MAX_SAFE_INTEGER+2', 'gpu_count=9007199254740993'],
    ['gpu_count=sixteen', 'gpu_count=sixteen'],
    ['duration_hours=0', 'gpu_count=8&duration_hours=0'],
    ['duration_hours=721', 'gpu_count=8&duration_hours=721'],
    ['duration_hours=1.5', 'gpu_count=8&duration_hours=1.5'],
    ['duration_hours=Infinity', 'gpu_count=8&duration_hours=Infinity'],
    ['an unknown parameter', 'gpu_count=8&colour=red'],
  ]),
  ...queryCases('/v1/prices/estimate', 'gpu_count=8', [
    ['gpu_type "a100"', 'gpu_type=a100&zone=us-west-1'],
    ['zone "mars-1"', 'gpu_type=h100&zone=mars-1'],
  ]),

  // GET /v1/trades
  ...authCases('GET', `/v1/trades?${MARKET}`, 'tradeOnly'),
  ...queryCases('/v1/trades', '', [
    ['gpu_type missing', 'zone=us-west-1'],
    ['zone missing', 'gpu_type=h100'],
    ['gpu_type "a100"', 'gpu_type=a100&zone=us-west-1'],
    ['zone "mars-1"', 'gpu_type=h100&zone=mars-1'],
  ]),
  ...queryCases('/v1/trades', MARKET, PAGING),

  // GET /v1/leases
  ...authCases('GET', '/v1/leases', 'tradeOnly'),
  ...queryCases('/v1/leases', '', [
    ['status "open"', 'status=open'],
    ['status of 10,000 characters', `status=${LONG}`],
    ...PAGING,
  ]),

  // GET and DELETE /v1/leases/{id}
  ...authCases('GET', '/v1/leases/{lease}', 'tradeOnly'),
  ...idCases('GET', '/v1/leases/{id}'),
  ...authCases('DELETE', '/v1/leases/{lease}', 'readOnly'),
  ...idCases('DELETE', '/v1/leases/{id}'),
  {
    name: 'malformed JSON body',
    method: 'DELETE',
    url: '/v1/leases/{lease}',
    raw: '{"a":',
    status: 400,
  },
  {
    name: 'a body over 64 KiB',
    method: 'DELETE',
    url: '/v1/leases/{lease}',
    raw: OVER_64_KIB,
    status: 413,
  },
  {
    name: 'an Idempotency-Key of 300 characters',
    method: 'DELETE',
    url: '/v1/leases/{lease}',
    headers: { 'idempotency-key': 'k'.repeat(300) },
    status: 400,
  },

  // POST /v1/leases/{id}/resell
  ...authCases('POST', '/v1/leases/{lease}/resell', 'readOnly'),
  ...idCases('POST', '/v1/leases/{id}/resell').map((c) => ({ ...c, body: RESELL })),
  ...bodyShapeCases('POST', '/v1/leases/{lease}/resell'),
  ...bodyCases('POST', '/v1/leases/{lease}/resell', RESELL, RESELL_VARIANTS),

  // GET /v1/leases/{id}/kubeconfig
  ...authCases('GET', '/v1/leases/{lease}/kubeconfig', 'readOnly'),
  ...idCases('GET', '/v1/leases/{id}/kubeconfig'),
  {
    name: 'a lease still provisioning',
    method: 'GET',
    url: '/v1/leases/{lease}/kubeconfig',
    status: 409,
    code: 'lease_not_ready',
  },

  // GET /v1/account and /v1/account/transactions
  ...authCases('GET', '/v1/account', 'tradeOnly'),
  ...authCases('GET', '/v1/account/transactions', 'tradeOnly'),
  ...queryCases('/v1/account/transactions', '', PAGING),
  // An endpoint that takes no query refuses any parameter rather than drop it.
  ...['/v1/account?foo=1', '/v1/ssh_keys?limit=1', '/v1/webhooks?offset=0'].map((url): Case => ({
    name: 'a query parameter it does not take',
    method: 'GET',
    url,
    status: 400,
  })),

  // POST, GET and DELETE /v1/ssh_keys
  ...authCases('POST', '/v1/ssh_keys', 'readOnly'),
  ...bodyShapeCases('POST', '/v1/ssh_keys'),
  ...bodyCases('POST', '/v1/ssh_keys', SSH_KEY, SSH_KEY_VARIANTS),
  ...authCases('GET', '/v1/ssh_keys', 'tradeOnly'),
  ...authCases('DELETE', '/v1/ssh_keys/key_x', 'readOnly'),
  ...idCases('DELETE', '/v1/ssh_keys/{id}').filter((c) => c.name !== 'a 65-character id'),
  {
    name: 'malformed JSON body',
    method: 'DELETE',
    url: '/v1/ssh_keys/key_x',
    raw: '{"a":',
    status: 400,
  },

  // The admin API: the admin token (D31) or a token with the admin scope (D24).
  ...authCases('POST', '/v1/admin/accounts', null),
  // D24: a valid token without the admin scope is known but may not: 403, not 401.
  {
    name: 'a customer token',
    method: 'POST',
    url: '/v1/admin/accounts',
    body: ACCOUNT,
    status: 403,
  },
  ...bodyShapeCases('POST', '/v1/admin/accounts', 'admin'),
  ...bodyCases('POST', '/v1/admin/accounts', ACCOUNT, ACCOUNT_VARIANTS, 'admin'),
  ...authCases('POST', '/v1/admin/clusters', null),
  {
    name: 'a customer token',
    method: 'POST',
    url: '/v1/admin/clusters',
    body: CLUSTER,
    status: 403,
  },
  // Up to 1,000 nodes of 253-byte hostnames (issue 18): this route takes more.
  ...bodyShapeCases('POST', '/v1/admin/clusters', 'admin', CLUSTER_BODY_LIMIT_BYTES),
  ...bodyCases('POST', '/v1/admin/clusters', CLUSTER, CLUSTER_VARIANTS, 'admin'),
  ...authCases('GET', '/v1/admin/clusters', null),
  { name: 'a customer token', method: 'GET', url: '/v1/admin/clusters', status: 403 },

  // No such route or method.
  { name: 'an unknown route', method: 'GET', url: '/v1/nope', status: 404 },
  { name: 'an unknown method', method: 'PATCH', url: '/v1/orders', body: ORDER, status: 404 },
  { name: 'no version', method: 'GET', url: '/orders', status: 404 },
];

// ---------------------------------------------------------------------------
// Sending and checking

function authorization(who: Who): string | undefined {
  switch (who) {
    case 'none':
      return undefined;
    case 'admin':
      return `Bearer ${ADMIN_TOKEN}`;
    case 'basic':
      return 'Basic dXNlcjpwYXNz';
    case 'unknownToken':
      return 'Bearer gpux_thisTokenWasNeverIssued0123456789abcdefghijk';
    case 'emptyBearer':
      return 'Bearer ';
    case 'hugeToken':
      return `Bearer ${'t'.repeat(10_000)}`;
    default: {
      const token = tokens.get(who);
      if (token === undefined) throw new Error(`no token for ${who}`);
      return `Bearer ${token}`;
    }
  }
}

async function send(c: Case): Promise<{ status: number; body: string; contentType: string }> {
  const url = c.url.replace('{lease}', leaseId).replace('{order}', orderId);
  const payload = c.raw ?? (c.body === undefined ? undefined : JSON.stringify(c.body));
  const headers: Record<string, string> = { ...c.headers };
  const auth = authorization(c.who ?? 'buyer');
  if (auth !== undefined) headers['authorization'] = auth;
  if (payload !== undefined && c.contentType !== null) {
    headers['content-type'] = c.contentType ?? 'application/json';
  }
  const res = await ex.app.inject({
    method: c.method,
    url,
    headers,
    ...(payload === undefined ? {} : { payload }),
  });
  return {
    status: res.statusCode,
    body: res.body,
    contentType: String(res.headers['content-type'] ?? ''),
  };
}

/** Stack frames, source paths or a stack property: what a 4xx must never show. */
const LEAK = /\n\s+at |\bat [\w$.<>]+ \(|\.[cm]?[jt]s:\d+|node_modules|\/src\/|"stack"/;

function expectDocumentedError(
  c: Case,
  res: { status: number; body: string; contentType: string },
): void {
  const where = `${c.method} ${c.url} (${c.name}) → ${res.status} ${res.body.slice(0, 300)}`;
  expect(res.status, where).toBeGreaterThanOrEqual(400);
  expect(res.status, where).toBeLessThan(500);
  expect(res.status, where).toBe(c.status);
  expect(res.contentType, where).toMatch(/^application\/json/);
  const json = JSON.parse(res.body) as { data?: unknown; error?: Record<string, unknown> };
  expect(Object.keys(json).sort(), where).toEqual(['data', 'error']);
  expect(json.data, where).toBeNull();
  const code = json.error?.['code'];
  const message = json.error?.['message'];
  expect(typeof message === 'string' && message.length > 0, where).toBe(true);
  expect(isErrorCode(code), where).toBe(true);
  if (!isErrorCode(code)) return;
  expect(ERROR_CODES[code].status, where).toBe(res.status);
  expect(code, where).toBe(c.code ?? DEFAULT_CODE[c.status]);
  expect(res.body, where).not.toMatch(LEAK);
  // What a person reads cites no decision number (docs/api/errors.md).
  expect(message, where).not.toMatch(/\bD\d{1,2}\b/);
  // A problem of the request's fields names its rule; `field` is the first one's.
  const errors = json.error?.['errors'];
  if (errors !== undefined) {
    expect(code, where).toBe('invalid_request');
    const problems = errors as { field?: unknown; rule?: unknown; message?: unknown }[];
    expect(problems.length, where).toBeGreaterThan(0);
    for (const p of problems) {
      expect(FIELD_RULES, where).toContain(p.rule);
      expect(typeof p.message, where).toBe('string');
    }
    expect(json.error?.['field'], where).toBe(problems[0]?.field);
  }
}

/** What a bad request could have changed. */
async function state(): Promise<unknown> {
  const get = async (url: string, token: string): Promise<unknown> =>
    (await ex.call('GET', url, token)).json;
  return {
    orders: await get('/v1/orders?limit=100', buyer.token),
    providerOrders: await get('/v1/orders?limit=100', provider.token),
    lease: await get(`/v1/leases/${leaseId}`, buyer.token),
    keys: await get('/v1/ssh_keys', buyer.token),
    account: await get('/v1/account', buyer.token),
    clusters: await get('/v1/admin/clusters', ADMIN_TOKEN),
    accounts: (await ex.db.query('SELECT id FROM accounts ORDER BY id')).length,
  };
}

// ---------------------------------------------------------------------------

describe('bad input', () => {
  it('covers every endpoint of the API', () => {
    const covered = new Set(
      CASES.map(
        (c) => `${c.method} ${c.url.split('?')[0]?.replace(/\/[^/]*\{\w+\}|\/key_x/, '/:id')}`,
      ),
    );
    for (const route of [
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
    ]) {
      expect(covered, route).toContain(route);
    }
  });

  it.each(CASES.map((c) => [`${c.method} ${c.url.slice(0, 70)} — ${c.name}`, c] as const))(
    '%s',
    async (_title, c) => {
      expectDocumentedError(c, await send(c));
    },
  );

  it('the baseline of each query is valid, so the cases above fail for their one change', async () => {
    for (const url of [
      `/v1/orders`,
      `/v1/orderbook?${MARKET}&depth=50`,
      `/v1/prices/estimate?${MARKET}&gpu_count=8&duration_hours=720`,
      `/v1/trades?${MARKET}&limit=100&offset=0`,
      `/v1/leases?limit=100`,
      `/v1/account/transactions?limit=1`,
      `/v1/leases/${leaseId}`,
    ]) {
      expect((await ex.call('GET', url, buyer.token)).status, url).toBe(200);
    }
  });

  it(
    // A DELETE body is never validated; the idempotency hash refuses bodies
    // nested deeper than it walks.
    'DELETE with a deeply nested JSON body and an Idempotency-Key is a 4xx',
    async () => {
      const c: Case = {
        name: 'deeply nested body with an Idempotency-Key',
        method: 'DELETE',
        url: '/v1/orders/ord_unknown',
        raw: '['.repeat(10_000) + ']'.repeat(10_000),
        headers: { 'idempotency-key': 'deep-nesting' },
        status: 400,
      };
      expectDocumentedError(c, await send(c));
    },
  );

  it('changes nothing: sending every case leaves no order, lease, key, account or cluster made or altered', async () => {
    // Sent again here, so this test needs no other to have run first.
    const before = await state();
    for (const c of CASES) await send(c);
    expect(await state()).toEqual(before);
  });
});
