// Request validation. Bodies are JSON and must carry the right types: a count
// sent as "16" is invalid_request, not quietly 16. Query strings and paths
// are text by nature, so they are coerced to the declared types. In both, a
// misspelt field is an error, never silently dropped (Fastify's default ajv
// would coerce bodies and drop unknown fields). Each route's schemas are
// compiled once, when the app is made ready, never per request.
//
// Every problem of the part of the request that fails (its path, then its
// body, then its query: Fastify stops at the first part that fails) is
// reported (allErrors), each naming its field, the rule and the allowed
// values (http/problems.ts, docs/api/errors.md).

import { isTime } from '@gpux/shared';
import { Ajv } from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';

/** RFC 1123 host names: dot-separated labels of letters, digits and inner hyphens. */
const HOSTNAME =
  /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/**
 * The `format`s request schemas use, each with what a value must be (for
 * the error message). `date-time` is exactly what parseTime() reads.
 */
export const FORMATS: Readonly<Record<string, { test(s: string): boolean; says: string }>> = {
  'date-time': {
    test: isTime,
    says: 'an ISO 8601 time with a zone, like 2026-11-22T10:00:00Z',
  },
  hostname: {
    test: (s) => HOSTNAME.test(s),
    says: 'a host name: dot-separated labels of letters, digits and inner hyphens (RFC 1123)',
  },
};

function newAjv(coerceTypes: false | 'array'): Ajv {
  // verbose: each error carries the schema it broke (its enum, properties,
  // examples), so the message can name what is allowed.
  const ajv = new Ajv({
    removeAdditional: false,
    useDefaults: true,
    allErrors: true,
    verbose: true,
    coerceTypes,
  });
  for (const [name, f] of Object.entries(FORMATS)) {
    ajv.addFormat(name, { type: 'string', validate: (s: string) => f.test(s) });
  }
  return ajv;
}

const strictAjv = newAjv(false);
const coercingAjv = newAjv('array');

type Validator = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

/**
 * ajv coerces "1e400" or "Infinity" in a query to Infinity and then skips
 * minimum and maximum (they test finite numbers only), so `?limit=Infinity`
 * would pass and reach the database: after coercion, numbers must be finite.
 */
function finiteNumbersOnly(validate: ValidateFunction): Validator {
  const check: Validator = (data) => {
    const valid = validate(data);
    const entries = typeof data === 'object' && data !== null ? Object.entries(data) : [];
    const infinite: ErrorObject[] = entries
      .filter(([, value]) =>
        [value].flat().some((v) => typeof v === 'number' && !Number.isFinite(v)),
      )
      .map(([key]) => ({
        keyword: 'type',
        instancePath: `/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`,
        schemaPath: '#',
        params: { type: 'finite number' },
        message: 'must be a finite number',
      }));
    const errors = [...(valid ? [] : (validate.errors ?? [])), ...infinite];
    check.errors = errors.length === 0 ? null : errors;
    return errors.length === 0;
  };
  return check;
}

/** Strict bodies; coercing, finite-only queries, paths and headers. */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  httpPart === 'body'
    ? strictAjv.compile(schema as object)
    : finiteNumbersOnly(coercingAjv.compile(schema as object));
