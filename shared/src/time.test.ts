import { describe, expect, it } from 'vitest';

import { GpuxError } from './errors.js';

import { parseTime } from './time.js';

describe('parseTime', () => {
  it('reads ISO 8601 times with a zone, to the millisecond', () => {
    expect(parseTime('2026-11-22T10:00:00Z', 't')).toBe(Date.UTC(2026, 10, 22, 10));
    expect(parseTime('2026-11-22T12:00:00.250+02:00', 't')).toBe(
      Date.UTC(2026, 10, 22, 10, 0, 0, 250),
    );
  });

  it.each([
    'tomorrow',
    '2026-11-22T10:00:00',
    '2026-11-22',
    '2026-13-01T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2026-04-31T00:00:00Z',
  ])('refuses %s with invalid_request', (v) => {
    let err: unknown;
    try {
      parseTime(v, 'start_time');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GpuxError);
    expect((err as GpuxError).code).toBe('invalid_request');
  });
});
