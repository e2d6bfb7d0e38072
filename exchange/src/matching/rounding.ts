/**
 * n / d rounded half to even (D1), for non-negative safe integers n and d > 0.
 * The engine's quantities stay far below 2^53, so plain numbers are exact.
 */
export function roundHalfEvenDiv(n: number, d: number): number {
  const q = Math.floor(n / d);
  const twiceR = 2 * (n - q * d);
  if (twiceR > d) return q + 1;
  if (twiceR === d) return q % 2 === 0 ? q : q + 1;
  return q;
}
