// Validation errors a person can act on (docs/api/errors.md, "Validation
// errors"): each names the field, the rule and what is allowed, the answer
// reports every problem of the request (the schema's and the checks after
// it), the first problem's field is `error.field`, and no message cites a
// decision number.

import { FIELD_RULES, GPU_TYPES, MAX_FIELD_PROBLEMS, ZONES } from '@gpux/shared';
import type { FieldProblem } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { Party, Reply, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;
let buyer: Party;
let provider: Party;

beforeAll(async () => {
  ex = await testExchange();
  buyer = await ex.account('buyer');
  provider = await ex.account('provider');
});

afterAll(async () => {
  await ex?.close();
});

interface Invalid {
  readonly code: string;
  readonly message: string;
  readonly field?: string;
  readonly errors: FieldProblem[];
}

/** The invalid_request of a reply, checked for the shape every one has. */
function invalid(r: Reply): Invalid {
  expect(r.status, r.body).toBe(400);
  const e = r.json['error'] as Invalid;
  expect(e.code).toBe('invalid_request');
  expect(Array.isArray(e.errors), r.body).toBe(true);
  expect(e.errors.length).toBeGreaterThan(0);
  expect(e.errors.length).toBeLessThanOrEqual(MAX_FIELD_PROBLEMS);
  for (const p of e.errors) {
    expect(FIELD_RULES).toContain(p.rule);
    // The message names the field it is about.
    if (p.field !== undefined) expect(p.message).toContain(p.field);
  }
  expect(e.field).toBe(e.errors[0]?.field);
  // The problems' messages, then how many more there were beyond the maximum.
  const joined = e.errors.map((p) => p.message).join('; ');
  expect(e.message.startsWith(joined)).toBe(true);
  expect(e.message.slice(joined.length)).toMatch(/^(|; and \d+ more problems?)$/);
  // Decision numbers belong in the code's comments, not in what a person reads.
  expect(r.body).not.toMatch(/\bD\d{1,2}\b/);
  return e;
}

const BUY = {
  side: 'buy',
  gpu_type: 'h100',
  zone: 'us-west-1',
  gpu_count: 8,
  duration_hours: 2,
};

describe('validation errors name the field, the rule and the allowed values', () => {
  it('an unknown GPU type: gpu_type must be one of the four, listed in `allowed`', async () => {
    const e = invalid(
      await ex.call('POST', '/v1/orders', buyer.token, { ...BUY, gpu_type: 'a100' }),
    );
    expect(e.errors).toEqual([
      {
        field: 'gpu_type',
        rule: 'enum',
        message: 'gpu_type must be one of h100, h200, b200, b300',
        allowed: [...GPU_TYPES],
      },
    ]);
    expect(e.message).toBe('gpu_type must be one of h100, h200, b200, b300');
    expect(e.field).toBe('gpu_type');
  });

  it('every problem of the body at once, in the order of the schema', async () => {
    const e = invalid(
      await ex.call('POST', '/v1/orders', buyer.token, {
        side: 'hold',
        gpu_type: 'a100',
        zone: 'mars-1',
        gpu_count: 12,
        colour: 'red',
      }),
    );
    expect(e.errors.map((p) => [p.field, p.rule])).toEqual([
      ['duration_hours', 'required'],
      ['colour', 'unknown_field'],
      ['side', 'enum'],
      ['gpu_type', 'enum'],
      ['gpu_count', 'multiple_of'],
      ['zone', 'enum'],
    ]);
    expect(e.errors.find((p) => p.field === 'gpu_count')).toMatchObject({
      message: 'gpu_count must be a multiple of 8',
      limit: 8,
    });
    expect(e.errors.find((p) => p.field === 'zone')?.allowed).toEqual([...ZONES]);
    expect(e.errors.find((p) => p.field === 'colour')?.allowed).toContain('gpu_count');
  });

  it('wrong JSON types say the type; a count below 8 says the minimum', async () => {
    const e = invalid(
      await ex.call('POST', '/v1/orders', buyer.token, {
        ...BUY,
        gpu_count: '16',
        duration_hours: 0,
        allow_partial: 'yes',
      }),
    );
    expect(e.errors).toEqual([
      { field: 'gpu_count', rule: 'type', message: 'gpu_count must be an integer' },
      {
        field: 'duration_hours',
        rule: 'minimum',
        message: 'duration_hours must be at least 1',
        limit: 1,
      },
      { field: 'allow_partial', rule: 'type', message: 'allow_partial must be true or false' },
    ]);
  });

  it('times are ISO 8601 with a zone, checked by the schema', async () => {
    const e = invalid(
      await ex.call('POST', '/v1/orders', buyer.token, { ...BUY, start_time: '2026-11-22 10:00' }),
    );
    expect(e.errors).toEqual([
      {
        field: 'start_time',
        rule: 'format',
        message: 'start_time must be an ISO 8601 time with a zone, like 2026-11-22T10:00:00Z',
      },
    ]);
  });

  it('the checks after the schema are collected too: a sell without a price, with buy-only fields', async () => {
    const e = invalid(
      await ex.call('POST', '/v1/orders', provider.token, {
        ...BUY,
        side: 'sell',
        allow_partial: true,
        flexible_window_hours: 2,
      }),
    );
    expect(e.errors.map((p) => [p.field, p.rule])).toEqual([
      ['limit_price', 'required'],
      ['allow_partial', 'conflict'],
      ['flexible_window_hours', 'conflict'],
    ]);
    expect(e.message).toMatch(/^limit_price is required for a sell/);
  });

  it('a market buy with a price in fractions of a cent: both problems of limit_price, and cluster_id on a buy', async () => {
    const e = invalid(
      await ex.call('POST', '/v1/orders', buyer.token, {
        ...BUY,
        order_type: 'market',
        limit_price: 2.001,
        cluster_id: 'cls_x',
      }),
    );
    expect(e.errors).toEqual([
      {
        field: 'limit_price',
        rule: 'multiple_of',
        message: 'limit_price must be whole cents (at most 2 decimals)',
        limit: 0.01,
      },
      {
        field: 'limit_price',
        rule: 'conflict',
        message: 'a market order takes no limit_price (for a limit order, say order_type "limit")',
      },
      { field: 'cluster_id', rule: 'conflict', message: 'cluster_id applies to sells' },
    ]);
  });

  it('a price of 0 or over the largest is refused by the schema with its bound', async () => {
    const zero = invalid(
      await ex.call('POST', '/v1/orders', buyer.token, { ...BUY, limit_price: 0 }),
    );
    expect(zero.errors).toEqual([
      {
        field: 'limit_price',
        rule: 'minimum',
        message: 'limit_price must be greater than 0',
        limit: 0,
      },
    ]);
    const huge = invalid(
      await ex.call('POST', '/v1/orders', buyer.token, { ...BUY, limit_price: 5_000_000 }),
    );
    expect(huge.errors).toEqual([
      {
        field: 'limit_price',
        rule: 'maximum',
        message: 'limit_price must be at most 1000000',
        limit: 1_000_000,
      },
    ]);
  });

  it('a body that is not an object has no field', async () => {
    const r = await ex.call('POST', '/v1/orders', buyer.token, [BUY]);
    const e = invalid(r);
    expect(e.field).toBeUndefined();
    expect(e.errors).toEqual([{ rule: 'type', message: 'the request body must be a JSON object' }]);
  });

  it('query parameters: every problem, a non-finite number included', async () => {
    const e = invalid(
      await ex.call('GET', '/v1/orders?status=done&limit=Infinity&colour=red', buyer.token),
    );
    expect(e.errors.map((p) => [p.field, p.rule])).toEqual([
      ['colour', 'unknown_field'],
      ['status', 'enum'],
      ['limit', 'type'],
    ]);
    expect(e.errors.find((p) => p.field === 'limit')?.message).toBe(
      'limit must be a finite number',
    );
  });

  it('GET /v1/orderbook requires gpu_type, which instance_type may stand in for', async () => {
    const missing = invalid(await ex.call('GET', '/v1/orderbook?zone=us-west-1', buyer.token));
    expect(missing.errors).toEqual([
      { field: 'gpu_type', rule: 'required', message: 'gpu_type is required' },
    ]);
    const by = await ex.call(
      'GET',
      '/v1/orderbook?zone=us-west-1&instance_type=16xh200',
      buyer.token,
    );
    expect(by.status).toBe(200);
    expect(by.json).toMatchObject({ gpu_type: 'h200', instance_type: '16xh200' });
    const odd = invalid(
      await ex.call('GET', '/v1/orderbook?zone=us-west-1&instance_type=12xh200', buyer.token),
    );
    expect(odd.errors).toEqual([
      expect.objectContaining({ field: 'instance_type', rule: 'multiple_of', limit: 8 }),
    ]);
    const clash = invalid(
      await ex.call(
        'GET',
        '/v1/orderbook?zone=us-west-1&gpu_type=h100&instance_type=8xh200',
        buyer.token,
      ),
    );
    expect(clash.errors).toEqual([
      {
        field: 'instance_type',
        rule: 'conflict',
        message: 'instance_type names h200 but gpu_type is h100',
      },
    ]);
    const bad = invalid(
      await ex.call('GET', '/v1/orderbook?zone=us-west-1&instance_type=8xa100', buyer.token),
    );
    expect(bad.errors.map((p) => [p.field, p.rule])).toEqual([
      ['gpu_type', 'required'],
      ['instance_type', 'format'],
    ]);
    expect(bad.errors[1]?.message).toMatch(/^instance_type must look like 8xh100/);
  });

  it('nested fields are named with their index', async () => {
    const e = invalid(
      await ex.call('POST', '/v1/admin/clusters', ADMIN_TOKEN, {
        provider_account_id: provider.accountId,
        gpu_type: 'h100',
        zone: 'us-west-1',
        nodes: [{ hostname: 'gpu-1' }, { hostname: 'gpu_2' }, { hostname: 'gpu-3', gpus: 8 }],
      }),
    );
    expect(e.errors).toEqual([
      {
        field: 'nodes[1].hostname',
        rule: 'format',
        message:
          'nodes[1].hostname must be a host name: dot-separated labels of letters, digits and inner hyphens (RFC 1123)',
      },
      {
        field: 'nodes[2].gpus',
        rule: 'unknown_field',
        message: 'nodes[2].gpus is not a known field (known: hostname)',
        allowed: ['hostname'],
      },
    ]);
  });

  it('many problems are listed up to the maximum, and the message says how many more', async () => {
    const nodes = Array.from({ length: MAX_FIELD_PROBLEMS + 5 }, (_, i) => ({
      hostname: `bad_${i}`,
    }));
    const e = invalid(
      await ex.call('POST', '/v1/admin/clusters', ADMIN_TOKEN, {
        provider_account_id: provider.accountId,
        gpu_type: 'h100',
        zone: 'us-west-1',
        nodes,
      }),
    );
    expect(e.errors).toHaveLength(MAX_FIELD_PROBLEMS);
    expect(e.message.endsWith('; and 5 more problems')).toBe(true);
    expect(e.message.split('; ').slice(0, -1)).toEqual(e.errors.map((p) => p.message));
  });

  it('the checks of a resale after its schema are collected and name their fields', async () => {
    const e = invalid(
      await ex.call('POST', '/v1/leases/lse_none/resell', buyer.token, {
        limit_price: 1.005,
        available_until: 'soon',
      }),
    );
    expect(e.errors.map((p) => [p.field, p.rule])).toEqual([['available_until', 'format']]);
    const money = invalid(
      await ex.call('POST', '/v1/leases/lse_none/resell', buyer.token, { limit_price: 1.005 }),
    );
    expect(money.errors).toEqual([
      {
        field: 'limit_price',
        rule: 'multiple_of',
        message: 'limit_price must be whole cents (at most 2 decimals)',
        limit: 0.01,
      },
    ]);
  });

  it('a money field of the admin API names itself', async () => {
    const e = invalid(
      await ex.call('POST', '/v1/admin/accounts', ADMIN_TOKEN, {
        name: 'x',
        organization: 'x',
        scopes: ['read', 'read', 'root'],
        credit_limit: -1,
      }),
    );
    expect(e.errors.map((p) => [p.field, p.rule])).toEqual([
      ['scopes[2]', 'enum'],
      ['scopes', 'unique_items'],
      ['credit_limit', 'minimum'],
    ]);
  });
});

describe('refusals of the book name the field too', () => {
  it('price_out_of_collar names limit_price and cites no decision', async () => {
    const book = ex.book();
    const seller = await ex.party('seller');
    await ex.cluster(seller, 2, book.gpu_type, book.zone);
    const sell = { ...book, side: 'sell', gpu_count: 16, duration_hours: 24, limit_price: 2 };
    expect((await ex.call('POST', '/v1/orders', seller.token, sell)).status).toBe(200);
    // A trade at $2 makes the reference price (D15).
    const trade = { ...book, side: 'buy', gpu_count: 8, duration_hours: 2 };
    expect((await ex.call('POST', '/v1/orders', buyer.token, trade)).json['status']).toBe('filled');
    const far = await ex.call('POST', '/v1/orders', buyer.token, {
      ...book,
      side: 'buy',
      gpu_count: 8,
      duration_hours: 2,
      limit_price: 10,
    });
    expect(far.status).toBe(400);
    expect(far.json['error']).toMatchObject({ code: 'price_out_of_collar', field: 'limit_price' });
    expect(far.body).not.toMatch(/\bD\d{1,2}\b/);
  });
});
