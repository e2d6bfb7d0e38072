import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, GpuxError, errorBody, isErrorCode } from './errors.js';
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
