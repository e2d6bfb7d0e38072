// Request validation. Bodies are JSON and must carry the right types: a count
// sent as "16" is invalid_request, not quietly 16. Query strings and paths
// are text by nature, so they are coerced to the declared types. In both, a
// misspelt field is an error, never silently dropped (Fastify's default ajv
// would coerce bodies and drop unknown fields). Each route's schemas are
// compiled once, when the app is made ready, never per request.

import { Ajv } from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';

const AJV_OPTIONS = { removeAdditional: false, useDefaults: true, allErrors: false } as const;
const strictAjv = new Ajv({ ...AJV_OPTIONS, coerceTypes: false });
const coercingAjv = new Ajv({ ...AJV_OPTIONS, coerceTypes: 'array' });

type Validator = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

/**
 * ajv coerces "1e400" or "Infinity" in a query to Infinity and then skips
 * minimum and maximum (they test finite numbers only), so `?limit=Infinity`
 * would pass and reach the database: after coercion, numbers must be finite.
 */
function finiteNumbersOnly(validate: ValidateFunction): Validator {
  const check: Validator = (data) => {
    if (!validate(data)) {
      check.errors = validate.errors ?? null;
      return false;
    }
    const entries = typeof data === 'object' && data !== null ? Object.entries(data) : [];
    const bad = entries.find(([, value]) =>
      [value].flat().some((v) => typeof v === 'number' && !Number.isFinite(v)),
    );
    check.errors =
      bad === undefined
        ? null
        : [
            {
              keyword: 'type',
              instancePath: `/${bad[0]}`,
              schemaPath: '#',
              params: {},
              message: 'must be a finite number',
            },
          ];
    return bad === undefined;
  };
  return check;
}

/** Strict bodies; coercing, finite-only queries, paths and headers. */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  httpPart === 'body'
    ? strictAjv.compile(schema as object)
    : finiteNumbersOnly(coercingAjv.compile(schema as object));
