// What ajv found wrong with a request, in the words of docs/api/errors.md:
// one problem per field and rule, naming the field as a client writes it
// (`gpu_type`, `nodes[2].hostname`), the rule, and what is allowed
// (`gpu_type must be one of h100, h200, b200, b300`). Installed as Fastify's
// schemaErrorFormatter (app.ts), so a failed validation is a ValidationError
// (invalid_request with `field` and `errors`) by the time errors.ts sees it.

import { ValidationError } from '@gpux/shared';
import type { AllowedValue, FieldProblem } from '@gpux/shared';
import type { ErrorObject } from 'ajv';
import type { FastifySchemaValidationError } from 'fastify';

import { FORMATS } from './validation.js';

type Json = Readonly<Record<string, unknown>>;

function isJson(x: unknown): x is Json {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** `/nodes/2/hostname` → `nodes[2].hostname`; '' for the part itself. */
export function fieldName(instancePath: string, child?: string): string {
  const segments = instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (child !== undefined) segments.push(child);
  let name = '';
  for (const s of segments) {
    name += /^\d+$/.test(s) ? `[${s}]` : name === '' ? s : `.${s}`;
  }
  return name;
}

function list(values: readonly AllowedValue[]): string {
  return values.map((v) => (v === null ? 'null' : String(v))).join(', ');
}

const TYPE_WORDS: Readonly<Record<string, string>> = {
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'an array',
  null: 'null',
  'finite number': 'a finite number',
};

function typeWords(type: unknown): string {
  const types = String(type).split(',');
  return types.map((t) => TYPE_WORDS[t] ?? t).join(' or ');
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** The allowed values of an enum, without the null a Nullable() adds when null is a type. */
function allowedOf(e: ErrorObject): AllowedValue[] {
  const values = (e.params as { allowedValues?: unknown }).allowedValues;
  return Array.isArray(values) ? (values as AllowedValue[]) : [];
}

/** One ajv error as a problem of `field` (never undefined for a part's own fields). */
function problemOf(e: ErrorObject, where: string): FieldProblem {
  const params = e.params as Record<string, unknown>;
  const field = fieldName(e.instancePath);
  const name = field === '' ? where : field;
  const at = field === '' ? {} : { field };
  const limit = typeof params['limit'] === 'number' ? params['limit'] : undefined;
  switch (e.keyword) {
    case 'required': {
      const missing = fieldName(e.instancePath, String(params['missingProperty']));
      return { field: missing, rule: 'required', message: `${missing} is required` };
    }
    case 'additionalProperties': {
      const unknown = fieldName(e.instancePath, String(params['additionalProperty']));
      const parent: unknown = e.parentSchema;
      const properties = isJson(parent) ? parent['properties'] : undefined;
      const known = isJson(properties) ? Object.keys(properties) : [];
      return {
        field: unknown,
        rule: 'unknown_field',
        message:
          known.length === 0
            ? `${unknown} is not a known field (there are none here)`
            : `${unknown} is not a known field (known: ${known.join(', ')})`,
        allowed: known,
      };
    }
    case 'type':
      return { ...at, rule: 'type', message: `${name} must be ${typeWords(params['type'])}` };
    case 'enum': {
      const allowed = allowedOf(e);
      return { ...at, rule: 'enum', message: `${name} must be one of ${list(allowed)}`, allowed };
    }
    case 'const': {
      const allowed = [params['allowedValue'] as AllowedValue];
      return { ...at, rule: 'enum', message: `${name} must be ${list(allowed)}`, allowed };
    }
    case 'minimum':
    case 'exclusiveMinimum':
    case 'maximum':
    case 'exclusiveMaximum': {
      const words: Readonly<Record<string, string>> = {
        minimum: 'at least',
        exclusiveMinimum: 'greater than',
        maximum: 'at most',
        exclusiveMaximum: 'less than',
      };
      return {
        ...at,
        rule: e.keyword.toLowerCase().includes('min') ? 'minimum' : 'maximum',
        message: `${name} must be ${words[e.keyword] ?? ''} ${String(limit)}`,
        ...(limit === undefined ? {} : { limit }),
      };
    }
    case 'multipleOf': {
      const of = Number(params['multipleOf']);
      return {
        ...at,
        rule: 'multiple_of',
        message: `${name} must be a multiple of ${of}`,
        limit: of,
      };
    }
    case 'minLength':
      return {
        ...at,
        rule: 'min_length',
        message:
          limit === 1
            ? `${name} must not be empty`
            : `${name} must be at least ${plural(limit ?? 0, 'character')} long`,
        ...(limit === undefined ? {} : { limit }),
      };
    case 'maxLength':
      return {
        ...at,
        rule: 'max_length',
        message: `${name} must be at most ${plural(limit ?? 0, 'character')} long`,
        ...(limit === undefined ? {} : { limit }),
      };
    case 'minItems':
      return {
        ...at,
        rule: 'min_items',
        message: `${name} must have at least ${plural(limit ?? 0, 'item')}`,
        ...(limit === undefined ? {} : { limit }),
      };
    case 'maxItems':
      return {
        ...at,
        rule: 'max_items',
        message: `${name} must have at most ${plural(limit ?? 0, 'item')}`,
        ...(limit === undefined ? {} : { limit }),
      };
    case 'uniqueItems':
      return { ...at, rule: 'unique_items', message: `${name} must not list a value twice` };
    case 'format': {
      const format = String(params['format']);
      const says = FORMATS[format]?.says ?? `a ${format}`;
      return { ...at, rule: 'format', message: `${name} must be ${says}` };
    }
    case 'pattern': {
      const parent: unknown = e.parentSchema;
      const examples = isJson(parent) ? parent['examples'] : undefined;
      const [example] = Array.isArray(examples) ? (examples as AllowedValue[]) : [];
      const pattern = String(params['pattern']);
      return {
        ...at,
        rule: 'format',
        message:
          example === undefined
            ? `${name} must match ${pattern}`
            : `${name} must look like ${list([example])} (${pattern})`,
      };
    }
    default:
      // A keyword the request schemas do not use (anyOf, ...): ajv's words.
      return { ...at, rule: 'invalid', message: `${name} ${e.message ?? 'is not valid'}` };
  }
}

/** The part of a request Fastify validates ('body', 'querystring', 'params', 'headers'). */
type Part = 'body' | 'querystring' | 'params' | 'headers';

/** What the whole part is called when the problem is the part itself. */
const PART_NAMES: Readonly<Record<Part, string>> = {
  body: 'the request body',
  querystring: 'the query string',
  params: 'the path',
  headers: 'the headers',
};

/**
 * Fastify's schemaErrorFormatter: every problem ajv found in one part of
 * the request (allErrors), in schema order, as one ValidationError.
 */
export function schemaErrorFormatter(errors: FastifySchemaValidationError[], dataVar: Part): Error {
  const problems = (errors as ErrorObject[]).map((e) => problemOf(e, PART_NAMES[dataVar]));
  return problems.length === 0
    ? new ValidationError([{ rule: 'invalid', message: `${PART_NAMES[dataVar]} is not valid` }])
    : new ValidationError(problems);
}
