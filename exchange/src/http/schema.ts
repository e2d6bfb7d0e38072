// Building blocks for the routes' JSON Schemas, written with TypeBox so that
// one object is at once what ajv validates, what fast-json-stringify
// serializes, what the OpenAPI document publishes (docs/api/openapi.md) and,
// through the type provider, the TypeScript type of the request and of the
// handler's answer. Nothing here is compiled per request: Fastify compiles
// each route's schemas once, when the app is made ready.

import { Type } from '@sinclair/typebox';
import type { SchemaOptions, Static, TSchema, TUnsafe } from '@sinclair/typebox';

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

/** What every list answers with beside its items. */
export const PAGE_FIELDS = {
  total: Type.Integer({ minimum: 0, description: 'How many match the filter.' }),
  limit: Type.Integer({ minimum: 1 }),
  offset: Type.Integer({ minimum: 0 }),
};
