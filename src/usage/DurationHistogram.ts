/**
 * Task durations as the rollups keep them (migration 0020, `usage_duration_bucket`): counts in 48
 * log-spaced buckets. Bucket 1 is under 10 ms; bucket i ≥ 2 is [10·2^((i-2)/2), 10·2^((i-1)/2)) ms, a
 * factor √2 wide; bucket 48 is open-ended (from about 23.3 h). Histograms of any rows merge by adding
 * them, so a percentile over any range and grouping is read from the rollups, never from the tasks.
 */
export const BUCKETS = 48

/** Lower bound of bucket i (1-based), in ms. */
const lower = (i: number) => i === 1 ? 0 : 10 * 2 ** ((i - 2) / 2)

/** The bucket a duration falls in: the same rule as the SQL function. */
export const bucketOf = (ms: number) => ms < 10 ? 1 : Math.min(BUCKETS, Math.floor(2 * Math.log2(ms / 10)) + 2)

/**
 * The duration at quantile `q` (0 < q ≤ 1): the bucket holding the ⌈q·n⌉-th smallest duration, read as its
 * geometric midpoint (a factor 2^¼ from either bound: within 19% of the true value); bucket 1 as 5 ms, the
 * last as its lower bound. `null` for an empty histogram.
 */
export const quantile = (histogram: ReadonlyArray<number>, q: number): number | null => {
  const total = histogram.reduce((a, b) => a + b, 0)
  if (total === 0) return null
  const rank = Math.max(1, Math.ceil(q * total))
  let seen = 0
  for (let i = 1; i <= histogram.length; i++) {
    seen += histogram[i - 1]!
    if (seen >= rank) {
      if (i === 1) return 5
      if (i === BUCKETS) return Math.round(lower(i))
      return Math.round(lower(i) * 2 ** 0.25 * 100) / 100
    }
  }
  return null
}

/** Adds `b` into `a` (same length). */
export const addInto = (a: Array<number>, b: ReadonlyArray<number>) => {
  for (let i = 0; i < b.length; i++) a[i] = (a[i] ?? 0) + b[i]!
  return a
}
