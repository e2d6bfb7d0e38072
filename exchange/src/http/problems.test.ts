// ajv's errors in the words of docs/api/errors.md: the validators the app
// uses (validation.ts), the formatter it installs (problems.ts).

import { ValidationError } from '@gpux/shared';
import type { FieldProblem } from '@gpux/shared';
import { Type } from '@sinclair/typebox';
import type { FastifySchemaValidationError } from 'fastify';
import { describe, expect, it } from 'vitest';

import { Nullable, StringEnum } from './schema.js';
import { fieldName, schemaErrorFormatter } from './problems.js';
import { validatorCompiler } from './validation.js';

type Part = 'body' | 'querystring';

/** The problems `data` has against `schema`, as the app would answer them. */
function problems(schema: object, data: unknown, httpPart: Part = 'body'): FieldProblem[] {
  const validate = validatorCompiler({ schema, httpPart, method: 'POST', url: '/x' }) as ((
    d: unknown,
  ) => boolean) & { errors?: FastifySchemaValidationError[] | null };
  if (validate(data)) return [];
  const err = schemaErrorFormatter(validate.errors ?? [], httpPart);
  expect(err).toBeInstanceOf(ValidationError);
  return [...(err as ValidationError).problems];
}

describe('fieldName', () => {
  it('names nested fields as a client writes them', () => {
    expect(fieldName('')).toBe('');
    expect(fieldName('', 'gpu_type')).toBe('gpu_type');
    expect(fieldName('/nodes/2/hostname')).toBe('nodes[2].hostname');
    expect(fieldName('/nodes/2', 'gpus')).toBe('nodes[2].gpus');
    expect(fieldName('/a~1b/c~0d')).toBe('a/b.c~d');
  });
});

describe('schemaErrorFormatter', () => {
  const Body = Type.Object(
    {
      kind: StringEnum(['a', 'b'] as const),
      count: Type.Integer({ minimum: 8, maximum: 80, multipleOf: 8 }),
      name: Type.String({ minLength: 1, maxLength: 3 }),
      when: Type.Optional(Type.String({ format: 'date-time' })),
      tags: Type.Optional(
        Type.Array(Type.String(), { minItems: 1, maxItems: 2, uniqueItems: true }),
      ),
      price: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
      limit: Type.Optional(Nullable(Type.Number())),
      code: Type.Optional(Type.String({ pattern: '^[0-9]+x$', examples: ['8x'] })),
    },
    { additionalProperties: false },
  );

  it('reports every problem, each with its field, rule, message and bound or allowed values', () => {
    expect(
      problems(Body, {
        kind: 'c',
        count: 81,
        name: '',
        when: 'noon',
        tags: ['x', 'x', 'y'],
        price: 0,
        limit: 'none',
        code: 'x8',
        extra: 1,
      }),
    ).toEqual([
      {
        field: 'extra',
        rule: 'unknown_field',
        message:
          'extra is not a known field (known: kind, count, name, when, tags, price, limit, code)',
        allowed: ['kind', 'count', 'name', 'when', 'tags', 'price', 'limit', 'code'],
      },
      { field: 'kind', rule: 'enum', message: 'kind must be one of a, b', allowed: ['a', 'b'] },
      { field: 'count', rule: 'maximum', message: 'count must be at most 80', limit: 80 },
      { field: 'count', rule: 'multiple_of', message: 'count must be a multiple of 8', limit: 8 },
      { field: 'name', rule: 'min_length', message: 'name must not be empty', limit: 1 },
      {
        field: 'when',
        rule: 'format',
        message: 'when must be an ISO 8601 time with a zone, like 2026-11-22T10:00:00Z',
      },
      { field: 'tags', rule: 'max_items', message: 'tags must have at most 2 items', limit: 2 },
      { field: 'tags', rule: 'unique_items', message: 'tags must not list a value twice' },
      { field: 'price', rule: 'minimum', message: 'price must be greater than 0', limit: 0 },
      { field: 'limit', rule: 'type', message: 'limit must be a number or null' },
      { field: 'code', rule: 'format', message: 'code must look like 8x (^[0-9]+x$)' },
    ]);
  });

  it('a missing field is required; a wrong type says the type; a long string its length', () => {
    expect(problems(Body, { kind: 'a', count: '8', name: 'abcd' })).toEqual([
      { field: 'count', rule: 'type', message: 'count must be an integer' },
      {
        field: 'name',
        rule: 'max_length',
        message: 'name must be at most 3 characters long',
        limit: 3,
      },
    ]);
    expect(problems(Body, { kind: 'a' })).toEqual([
      { field: 'count', rule: 'required', message: 'count is required' },
      { field: 'name', rule: 'required', message: 'name is required' },
    ]);
  });

  it('the body as a whole has no field', () => {
    expect(problems(Body, 'text')).toEqual([
      { rule: 'type', message: 'the request body must be a JSON object' },
    ]);
  });

  it('a query is coerced, and its numbers must be finite, reported beside its other problems', () => {
    const Query = Type.Object(
      {
        limit: Type.Integer({ minimum: 1 }),
        depth: Type.Number(),
        side: StringEnum(['buy'] as const),
      },
      { additionalProperties: false },
    );
    expect(problems(Query, { limit: '0', depth: 'Infinity', side: 'sell' }, 'querystring')).toEqual(
      [
        { field: 'limit', rule: 'minimum', message: 'limit must be at least 1', limit: 1 },
        { field: 'side', rule: 'enum', message: 'side must be one of buy', allowed: ['buy'] },
        { field: 'depth', rule: 'type', message: 'depth must be a finite number' },
      ],
    );
  });

  it('date-time is what parseTime reads: a zone is required, a real date too', () => {
    const T = Type.Object({ t: Type.String({ format: 'date-time' }) });
    expect(problems(T, { t: '2026-11-22T10:00:00Z' })).toEqual([]);
    expect(problems(T, { t: '2026-11-22T12:00:00.250+02:00' })).toEqual([]);
    for (const t of ['2026-11-22T10:00:00', '2026-02-30T00:00:00Z', '2026-11-22']) {
      expect(problems(T, { t }).map((p) => p.rule)).toEqual(['format']);
    }
  });
});
