// Paging of every list (spec Limits, D21): `limit` 1-100 (default 20),
// `offset` ≥ 0 (default 0), newest first; out of range is invalid_request,
// never clamped silently.

export const PAGE_QUERY = {
  limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
  offset: { type: 'integer', minimum: 0, maximum: 1_000_000_000, default: 0 },
} as const;

export interface PageQuery {
  limit: number;
  offset: number;
}
