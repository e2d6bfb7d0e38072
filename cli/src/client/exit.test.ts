// The exit codes of the API commands (issue 24): each HTTP status of an
// error answer maps to the documented code, and stderr carries the API's
// code and message (and, for a 429, when to retry).

import { describe, expect, it } from 'vitest';

import {
  ApiError,
  EXIT,
  apiError,
  errorLines,
  exitCodeOf,
  networkError,
  retryWhen,
} from './exit.js';

describe('exitCodeOf', () => {
  it.each([
    [400, 2],
    [413, 2],
    [401, 3],
    [403, 3],
    [404, 4],
    [409, 5],
    [422, 5],
    [402, 6],
    [429, 7],
    [500, 8],
    [502, 8],
    [503, 8],
    // An answer the API never documents: the server's fault, not the user's.
    [418, 8],
  ])('HTTP %i exits %i', (status, code) => {
    expect(exitCodeOf(status)).toBe(code);
  });

  it('numbers the codes as docs/cli.md does', () => {
    expect(EXIT).toEqual({
      ok: 0,
      usage: 2,
      unauthorized: 3,
      notFound: 4,
      conflict: 5,
      insufficientFunds: 6,
      rateLimited: 7,
      server: 8,
      waitTimeout: 9,
      interrupted: 130,
    });
  });
});

describe('apiError', () => {
  it("reads the envelope's code and message, and each field problem", () => {
    const e = apiError(
      400,
      {
        data: null,
        error: {
          code: 'invalid_request',
          message: 'a; b',
          field: 'reason',
          errors: [
            { field: 'reason', rule: 'required', message: 'a' },
            { field: 'amount', rule: 'minimum', message: 'b' },
          ],
        },
      },
      null,
    );
    expect(e).toBeInstanceOf(ApiError);
    expect([e.code, e.apiMessage, e.problems, e.exitCode]).toEqual([
      'invalid_request',
      'a; b',
      ['a', 'b'],
      2,
    ]);
    expect(errorLines(e, 0)).toEqual([
      'gpux: invalid_request: a; b (HTTP 400)',
      'gpux:   - a',
      'gpux:   - b',
    ]);
  });

  it('names the status when the answer is not the envelope (a proxy page)', () => {
    const e = apiError(502, '<html>Bad Gateway</html>\n', null);
    expect([e.code, e.apiMessage, e.exitCode]).toEqual(['http_502', '<html>Bad Gateway</html>', 8]);
  });

  it('says when to retry a 429, from Retry-After in seconds or as a date', () => {
    const envelope = { data: null, error: { code: 'rate_limited', message: 'slow down' } };
    expect(errorLines(apiError(429, envelope, '3'), 0)).toEqual([
      'gpux: rate_limited: slow down (HTTP 429)',
      'gpux: rate limited: retry in 3 seconds',
    ]);
    const now = Date.parse('2026-05-01T00:00:00Z');
    expect(retryWhen('Fri, 01 May 2026 00:00:30 GMT', now)).toBe('in 30 seconds');
    expect(retryWhen('1', now)).toBe('in 1 second');
    expect(errorLines(apiError(429, envelope, null), now).at(-1)).toBe(
      'gpux: rate limited: retry later',
    );
  });
});

describe('networkError', () => {
  it('names the exchange and the cause, and exits 8', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), {
      code: 'ECONNREFUSED',
    });
    const e = networkError('http://127.0.0.1:9', new TypeError('fetch failed', { cause: refused }));
    expect(e.exitCode).toBe(8);
    expect(e.message).toBe('cannot reach the exchange at http://127.0.0.1:9: ECONNREFUSED');
  });
});
