/** Order statistics shared by the bench's summaries (no dependencies: probe processes load it too). */

/** The value at `p` % of an ascending array (the upper one of two at the median); NaN when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
