// Building blocks for the routes' JSON Schemas, written with TypeBox so that
// one object is at once what ajv validates, what fast-json-stringify
// serializes, what the OpenAPI document publishes (docs/api/openapi.md) and,
// through the type provider, the TypeScript type of the request and of the
// handler's answer. Nothing here is compiled per request: Fastify compiles
// each route's schemas once, when the app is made ready.

import { GPUS_PER_NODE } from '@gpux/shared';
import { Type } from '@sinclair/typebox';
import type { SchemaOptions, Static, TSchema, TUnsafe } from '@sinclair/typebox';

import { MAX_NODES, MAX_PRICE_CENTS } from '../matching/validate.js';

/**
 * `{type: 'string', enum: [...]}`: what the API has always published for its
 * vocabularies (TypeBox's own Union of Literals would be an anyOf).
 */
export function StringEnum<const T extends readonly string[]>(
  values: T,
  options: SchemaOptions = {},
): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ ...options, type: 'string', enum: [...values] });
}

/**
 * `T` or null, written `type: [T, 'null']` (OpenAPI 3.1 / JSON Schema 2020-12;
 * 3.0's `nullable` does not exist there), with null added to an `enum` too
 * (an enum without it would refuse null whatever the type says). Only for
 * schemas with one `type`.
 */
export function Nullable<T extends TSchema>(schema: T): TUnsafe<Static<T> | null> {
  const { type, enum: values } = schema as { type?: unknown; enum?: unknown };
  if (typeof type !== 'string') throw new Error('Nullable() takes a schema with one type');
  return Type.Unsafe<Static<T> | null>({
    ...schema,
    type: [type, 'null'],
    ...(Array.isArray(values) ? { enum: [...(values as unknown[]), null] } : {}),
  });
}

/**
 * A query field with a `default`: left out of `required` (a client may omit
 * it) yet never undefined in the handler, because the validator fills the
 * default in (ajv's useDefaults, app.ts). TypeBox would type an optional
 * field `T | undefined`; this keeps the handler's type honest without a
 * second declaration.
 */
export function Defaulted<T extends TSchema>(schema: T): T {
  return Type.Optional(schema) as unknown as T;
}

/**
 * GPUs in whole 8-GPU nodes (D5: anything else is invalid_request, never
 * rounded): 8 to 80,000, the engine's 10,000 nodes (matching/validate.ts).
 */
export const GpuCount = (description?: string): TUnsafe<number> =>
  Type.Unsafe<number>({
    type: 'integer',
    minimum: GPUS_PER_NODE,
    maximum: MAX_NODES * GPUS_PER_NODE,
    multipleOf: GPUS_PER_NODE,
    description: description ?? 'GPUs, in whole nodes of 8: 8, 16, 24, …',
  });

/**
 * A price in a request: dollars per GPU-hour, above 0 and at most the
 * engine's largest (matching/validate.ts). Whole cents is checked where the
 * number is read exactly (parsePositiveDollars, D1): JSON Schema's
 * `multipleOf: 0.01` is not exact in binary floating point, so it is not
 * published as one.
 */
export const Price = (description: string): TUnsafe<number> =>
  Type.Unsafe<number>({
    type: 'number',
    exclusiveMinimum: 0,
    maximum: MAX_PRICE_CENTS / 100,
    description: `${description} Dollars per GPU-hour in whole cents (at most 2 decimals).`,
  });

/** Dollars as a JSON number rounded to cents (D1). */
export const Dollars = (description?: string): TUnsafe<number> =>
  Type.Unsafe<number>({ type: 'number', ...(description === undefined ? {} : { description }) });

/** ISO 8601 in UTC, e.g. 2026-11-22T10:00:00.000Z (service spec conventions). */
export const Timestamp = (description?: string): TUnsafe<string> =>
  Type.Unsafe<string>({
    type: 'string',
    format: 'date-time',
    ...(description === undefined ? {} : { description }),
  });

/** The `{id}` of every `/:id` route. */
export const IdParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 64 }) },
  { additionalProperties: false },
);

/** Paging of every list (spec Limits, D21): out of range is invalid_request, never clamped. */
export const PAGE_QUERY = {
  limit: Defaulted(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  offset: Defaulted(Type.Integer({ minimum: 0, maximum: 1_000_000_000, default: 0 })),
};

/** The query of a list with nothing to filter. */
export const PageQuery = Type.Object(PAGE_QUERY, { additionalProperties: false });

/** The query of an API route that takes none: any parameter is unknown (400, never dropped). */
export const NoQuery = Type.Object({}, { additionalProperties: false });

/** What every list answers with beside its items. */
export const PAGE_FIELDS = {
  total: Type.Integer({ minimum: 0, description: 'How many match the filter.' }),
  limit: Type.Integer({ minimum: 1 }),
  offset: Type.Integer({ minimum: 0 }),
};
