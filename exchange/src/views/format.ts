// How times and durations are written in JSON (service spec conventions).

/** ISO 8601 in UTC, e.g. 2026-11-22T10:00:00.000Z. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Hours as a JSON number, to the second (the spec shows hours as numbers). */
export function hoursOf(ms: number): number {
  return Math.round(ms / 1000) / 3600;
}
