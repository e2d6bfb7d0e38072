import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  ERROR_CODES,
  FIELD_RULES,
  FieldProblems,
  GpuxError,
  MAX_FIELD_PROBLEMS,
  ValidationError,
  errorBody,
  fieldError,
  isErrorCode,
} from './errors.js';
import type { ErrorCode } from './errors.js';

const DOC_URL = new URL('../../docs/api/errors.md', import.meta.url);

interface DocRow {
  status: number;
  decision: string;
}

// Rows look like: | `code` | 409 | meaning | D17 |
function readDocTable(): Map<string, DocRow> {
  const rows = new Map<string, DocRow>();
  for (const line of readFileSync(DOC_URL, 'utf8').split('\n')) {
    const m = /^\|\s*`([a-z_]+)`\s*\|\s*(\d{3})\s*\|.*\|\s*(D\d+)\s*\|\s*$/.exec(line);
    if (m?.[1] !== undefined && m[2] !== undefined && m[3] !== undefined) {
      rows.set(m[1], { status: Number(m[2]), decision: m[3] });
    }
  }
  return rows;
}

const codes = Object.keys(ERROR_CODES) as ErrorCode[];

describe('error catalogue', () => {
  const doc = readDocTable();

  it.each(codes)('%s has an HTTP error status and a meaning', (code) => {
    const entry = ERROR_CODES[code];
    expect(Number.isInteger(entry.status)).toBe(true);
    expect(entry.status).toBeGreaterThanOrEqual(400);
    expect(entry.status).toBeLessThan(600);
    expect(entry.meaning.length).toBeGreaterThan(0);
  });

  it.each(codes)('%s is documented in docs/api/errors.md with the same status', (code) => {
    const row = doc.get(code);
    expect(row, `docs/api/errors.md lacks a row for ${code}`).toBeDefined();
    expect(row?.status).toBe(ERROR_CODES[code].status);
    expect(row?.decision).toBe(ERROR_CODES[code].decision);
  });

  it('documents no code the catalogue lacks', () => {
    expect([...doc.keys()].filter((c) => !isErrorCode(c))).toEqual([]);
  });
});

describe('GpuxError', () => {
  it('derives its status from the catalogue and keeps the cause', () => {
    const cause = new Error('db down');
    const err = new GpuxError('insufficient_liquidity', 'not enough GPUs', {
      details: { missing_gpus: 16 },
      cause,
    });
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('GpuxError');
    expect(err.status).toBe(409);
    expect(err.cause).toBe(cause);
  });

  it('renders the D19 envelope with details beside code and message', () => {
    const err = new GpuxError('insufficient_liquidity', 'not enough GPUs', {
      details: { missing_gpus: 16, code: 'spoofed' },
    });
    expect(errorBody(err)).toEqual({
      data: null,
      error: { code: 'insufficient_liquidity', message: 'not enough GPUs', missing_gpus: 16 },
    });
  });
});

describe('validation problems (docs/api/errors.md, "Validation errors")', () => {
  it('every rule is documented in the rule table, and the table has no other', () => {
    const documented = readFileSync(DOC_URL, 'utf8')
      .split('\n')
      .map((line) => /^\|\s*`([a-z_]+)`\s*\|\s*(?:is|has|does|lists|contradicts)\b/.exec(line)?.[1])
      .filter((r): r is string => r !== undefined);
    expect(documented.sort()).toEqual([...FIELD_RULES].sort());
  });

  it('renders the first field, every problem and their messages joined', () => {
    const err = new ValidationError([
      {
        field: 'gpu_type',
        rule: 'enum',
        message: 'gpu_type must be one of h100',
        allowed: ['h100'],
      },
      {
        field: 'gpu_count',
        rule: 'multiple_of',
        message: 'gpu_count must be a multiple of 8',
        limit: 8,
      },
    ]);
    expect(err.code).toBe('invalid_request');
    expect(err.status).toBe(400);
    expect(errorBody(err)).toEqual({
      data: null,
      error: {
        code: 'invalid_request',
        message: 'gpu_type must be one of h100; gpu_count must be a multiple of 8',
        field: 'gpu_type',
        errors: [
          {
            field: 'gpu_type',
            rule: 'enum',
            message: 'gpu_type must be one of h100',
            allowed: ['h100'],
          },
          {
            field: 'gpu_count',
            rule: 'multiple_of',
            message: 'gpu_count must be a multiple of 8',
            limit: 8,
          },
        ],
      },
    });
    // code and message come first in the envelope.
    expect(Object.keys(errorBody(err).error).slice(0, 2)).toEqual(['code', 'message']);
  });

  it('lists at most MAX_FIELD_PROBLEMS and says how many more there were', () => {
    const many = Array.from({ length: MAX_FIELD_PROBLEMS + 2 }, (_, i) => ({
      field: `f${i}`,
      rule: 'required' as const,
      message: `f${i} is required`,
    }));
    const body = errorBody(new ValidationError(many)).error;
    expect(body['errors']).toHaveLength(MAX_FIELD_PROBLEMS);
    expect(body.message.endsWith('; and 2 more problems')).toBe(true);
    expect(() => new ValidationError([])).toThrow(RangeError);
  });

  it('FieldProblems gathers the problems of checks run one after another, and lets other errors through', () => {
    const problems = new FieldProblems();
    expect(problems.take(() => 1)).toBe(1);
    expect(
      problems.take(() => {
        throw fieldError('limit_price', 'minimum', 'limit_price must be greater than 0', {
          limit: 0,
        });
      }),
    ).toBeUndefined();
    problems.add({ field: 'cluster_id', rule: 'conflict', message: 'cluster_id applies to sells' });
    expect(problems.any).toBe(true);
    expect(() =>
      problems.take(() => {
        throw new GpuxError('not_found', 'no such thing');
      }),
    ).toThrow('no such thing');
    let thrown: unknown;
    try {
      problems.throwIfAny();
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ValidationError);
    expect((thrown as ValidationError).problems.map((p) => p.field)).toEqual([
      'limit_price',
      'cluster_id',
    ]);
    expect(() => new FieldProblems().throwIfAny()).not.toThrow();
  });
});
