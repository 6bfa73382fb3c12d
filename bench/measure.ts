// Timing helpers for benchmarks: repeat a measurement and report the median (the machine is shared
// and noisy, so single runs and means mislead).

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** Runs `fn` `runs` times (after one warm-up) and returns the median wall time in milliseconds. */
export async function medianMs(runs: number, fn: () => unknown): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return median(times);
}

export function fmt(value: number, digits = 2): string {
  return value >= 100 ? value.toFixed(0) : value.toFixed(digits);
}

export interface BenchSection {
  readonly title: string;
  readonly command: string;
  /** Markdown: a short explanation and a table. */
  readonly body: string;
}
