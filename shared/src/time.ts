// Timestamps in requests: ISO 8601 with a zone (spec: "ISO 8601 strings in
// UTC"); an offset is accepted and converted, a time without a zone is not
// (it would mean the server's local time).

import { fieldError } from './errors.js';

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/** An ISO 8601 time with a zone that names a real instant (what parseTime accepts). */
export function isTime(value: string): boolean {
  return ISO_8601.test(value) && Number.isFinite(Date.parse(value)) && realDate(value);
}

/** Milliseconds since the epoch, or invalid_request naming the field. */
export function parseTime(value: string, field: string): number {
  if (!isTime(value)) {
    throw fieldError(
      field,
      'format',
      `${field} must be an ISO 8601 time with a zone, like 2026-11-22T10:00:00Z`,
    );
  }
  return Date.parse(value);
}

/** Date.parse rolls 2026-02-30 over to March 2; a real date survives the round trip. */
function realDate(value: string): boolean {
  const [y, m, d] = value.slice(0, 10).split('-').map(Number);
  if (y === undefined || m === undefined || d === undefined) return false;
  const t = new Date(Date.UTC(y, m - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d;
}
