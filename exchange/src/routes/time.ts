// Timestamps in requests: ISO 8601 with a zone (spec: "ISO 8601 strings in
// UTC"); an offset is accepted and converted, a time without a zone is not
// (it would mean the server's local time).

import { GpuxError } from '@gpux/shared';

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/** Milliseconds since the epoch, or invalid_request naming the field. */
export function parseTime(value: string, field: string): number {
  const ms = ISO_8601.test(value) ? Date.parse(value) : NaN;
  if (!Number.isFinite(ms)) {
    throw new GpuxError(
      'invalid_request',
      `${field} must be an ISO 8601 time with a zone, like 2026-11-22T10:00:00Z`,
    );
  }
  return ms;
}
