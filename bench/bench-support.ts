// Shared by the benchmarks in bench/: percentiles of a sample and sequential timing.

export interface Stats {
  p50: number;
  p99: number;
  max: number;
  n: number;
}

/** p50, p99 and max of the samples (nearest rank). */
export function stats(samples: number[]): Stats {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { p50: q(0.5), p99: q(0.99), max: s.at(-1)!, n: s.length };
}

/** Runs fn n times one after another; the duration of each call in ms. */
export async function time(n: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn(i);
    out.push(performance.now() - t);
  }
  return out;
}

/**
 * Runs every case n times, taking turns in blocks of `block` calls (case after case, block after
 * block), so a floor and what is measured against it share the machine's conditions of the same
 * moments; the durations of each case's calls in ms, by case. `i` counts each case's calls.
 */
export async function interleaved<K extends string>(
  n: number,
  block: number,
  cases: Record<K, (i: number) => Promise<unknown>>,
): Promise<Record<K, number[]>> {
  const names = Object.keys(cases) as K[];
  const out = Object.fromEntries(names.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let done = 0; done < n; done += block) {
    const m = Math.min(block, n - done);
    for (const k of names) out[k].push(...(await time(m, (j) => cases[k](done + j))));
  }
  return out;
}
