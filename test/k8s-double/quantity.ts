// Kubernetes resource quantities ("8", "500m", "1Gi", "2k") as numbers, for
// the double's ResourceQuota admission.

const SUFFIXES: Record<string, number> = {
  '': 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

export function parseQuantity(q: unknown): number {
  if (typeof q === 'number') return q;
  if (typeof q !== 'string') return 0;
  const m = /^([+-]?[\d.]+(?:e[+-]?\d+)?)([a-zA-Z]*)$/.exec(q.trim());
  const factor = m === null ? undefined : SUFFIXES[m[2] ?? ''];
  if (m === null || factor === undefined)
    throw new Error(`quantities must match the regular expression: ${q}`);
  return Number(m[1]) * factor;
}

/** A number back as a quantity string, as a quota's status shows it. */
export function formatQuantity(n: number): string {
  return Number.isInteger(n) ? String(n) : `${Math.round(n * 1000)}m`;
}
