// The most events any window of a given length holds, for pacing checks: a limiter that lets a burst
// through shows it here whatever the average rate says.

/** The largest number of `times` (ms, any order) inside one half-open window `[t, t + windowMs)`. */
export function busiestWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let from = 0;
  for (let to = 0; to < sorted.length; to++) {
    while ((sorted[to] ?? 0) - (sorted[from] ?? 0) >= windowMs) from++;
    most = Math.max(most, to - from + 1);
  }
  return most;
}
