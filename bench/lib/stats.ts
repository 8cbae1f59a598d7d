// Percentiles over raw samples (milliseconds), nearest-rank.
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export const round = (v: number, digits = 1): number => Math.round(v * 10 ** digits) / 10 ** digits;

/** The middle sample, the upper one of an even count (what every bench's tables report as the median). */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
