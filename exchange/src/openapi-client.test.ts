// A client generated from the checked-in docs/api/openapi.json alone, as an
// integrator would make one: openapi-typescript writes the types,
// openapi-fetch is the client, and the TypeScript compiler checks a small
// program against them. What the document says must be what a client can
// check: closed sets are unions (a GPU type, a ledger kind, a rule of a
// field problem), a required query parameter is required, a count is a
// number. Each wrong program below must fail to compile, so the test fails
// when the document stops saying one of these things.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import openapiTS, { astToString } from 'openapi-typescript';
import type { OpenAPI3 } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOCUMENT = join(ROOT, 'docs/api/openapi.json');

let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gpux-openapi-client-'));
  const doc = JSON.parse(readFileSync(DOCUMENT, 'utf8')) as OpenAPI3;
  writeFileSync(join(dir, 'schema.d.ts'), astToString(await openapiTS(doc, { silent: true })));
  // The program imports openapi-fetch as a client project would, from its node_modules.
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(
    dirname(createRequire(import.meta.url).resolve('openapi-fetch/package.json')),
    join(dir, 'node_modules', 'openapi-fetch'),
    'dir',
  );
}, 60_000);

afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

const OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  strict: true,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  noEmit: true,
  skipLibCheck: true,
  types: [],
};

/** The compiler's errors for `program` (a module beside schema.d.ts), as text. */
function compile(name: string, program: string): string[] {
  const file = join(dir, `${name}.mts`);
  writeFileSync(file, PRELUDE + program);
  const p = ts.createProgram([file], OPTIONS);
  return ts
    .getPreEmitDiagnostics(p)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

const PRELUDE = `
import createClient from 'openapi-fetch';
import type { components, paths } from './schema.js';
const client = createClient<paths>({ baseUrl: 'http://127.0.0.1:8080' });
export type Schemas = components['schemas'];
`;

const VALID = `
export async function trade(): Promise<string[]> {
  const seen: string[] = [];
  const placed = await client.POST('/v1/orders', {
    body: {
      side: 'buy',
      gpu_type: 'h100',
      zone: 'us-west-1',
      gpu_count: 16,
      duration_hours: 4,
      order_type: 'limit',
      limit_price: 2.5,
      start_time: '2026-11-22T10:00:00Z',
    },
    headers: { 'Idempotency-Key': 'order-1' },
  });
  if (placed.data !== undefined) seen.push(placed.data.order_id, placed.data.status);
  if (placed.error !== undefined) {
    const e = placed.error.error;
    seen.push(e.code, e.message, e.field ?? '');
    for (const p of e.errors ?? []) {
      const rule: Schemas['FieldProblem']['rule'] = p.rule;
      seen.push(rule, p.message, String(p.limit ?? ''), ...(p.allowed ?? []).map(String));
    }
  }

  const book = await client.GET('/v1/orderbook', {
    params: { query: { gpu_type: 'h200', zone: 'eu-west-1', depth: 5 } },
  });
  for (const level of book.data?.asks ?? []) seen.push(String(level.price * level.gpus));

  const page = await client.GET('/v1/account/transactions', { params: { query: { limit: 10 } } });
  for (const t of page.data?.transactions ?? []) {
    // Exhaustive only if transaction_kind is a closed union.
    switch (t.transaction_kind) {
      case 'lease_charge':
      case 'lease_refund':
      case 'lease_failed':
      case 'resale_refund':
      case 'adjustment':
      case 'payout':
        seen.push(t.transaction_kind, t.kind, t.created_at);
        break;
      default: {
        const unknownKind: never = t.transaction_kind;
        throw new Error(unknownKind);
      }
    }
  }
  return seen;
}
`;

describe('a client generated from docs/api/openapi.json (openapi-typescript + openapi-fetch)', () => {
  it('type-checks a program that places a limit order, reads the book and the ledger, and reads an error', () => {
    expect(compile('valid', VALID)).toEqual([]);
  }, 60_000);

  const ORDER = `side: 'buy', zone: 'us-west-1', duration_hours: 4`;
  it.each([
    [
      'a GPU type the API does not sell',
      `void client.POST('/v1/orders', { body: { ${ORDER}, gpu_type: 'a100', gpu_count: 8 } });`,
      /"a100"/,
    ],
    [
      'gpu_count as a string',
      `void client.POST('/v1/orders', { body: { ${ORDER}, gpu_type: 'h100', gpu_count: '16' } });`,
      /string.*number|number.*string/,
    ],
    [
      'the order book without gpu_type',
      `void client.GET('/v1/orderbook', { params: { query: { zone: 'us-west-1' } } });`,
      /gpu_type/,
    ],
    [
      'a ledger kind the API never answers',
      `const r = await client.GET('/v1/account/transactions');
       export const fill = r.data?.transactions.some((t) => t.transaction_kind === 'fill');`,
      /"fill"/,
    ],
    [
      'a rule of a field problem the API never answers',
      `export const rule: Schemas['FieldProblem']['rule'] = 'too_big';`,
      /"too_big"/,
    ],
    [
      'a zone the API does not know',
      `void client.GET('/v1/trades', { params: { query: { gpu_type: 'h100', zone: 'mars-1' } } });`,
      /"mars-1"/,
    ],
  ])(
    'refuses to compile %s',
    (_name, program, expected) => {
      const errors = compile(`wrong-${expected.source.replace(/\W/g, '')}`, program);
      expect(errors.length).toBeGreaterThan(0);
      expect(errors.join('\n')).toMatch(expected);
    },
    60_000,
  );
});
