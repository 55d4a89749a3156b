// Figures for the bench: percentiles, per-round ratios summarised as median (min–max), targets.

/** The p-th percentile (0–100) of samples (nearest rank); NaN when empty. */
export function pct(samples: readonly number[], p: number): number {
  if (!samples.length) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Median with the spread of a set of per-round figures. */
export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly n: number;
}

export function spread(xs: readonly number[]): Spread {
  return { median: pct(xs, 50), min: Math.min(...xs), max: Math.max(...xs), n: xs.length };
}

/** "1.03× (0.97–1.12, 10 rounds)" style text. */
export function showSpread(s: Spread, unit = "×", digits = 2): string {
  return `${s.median.toFixed(digits)}${unit} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)}, n=${s.n})`;
}

/** One target of issue 13, checked against its median figure. */
export interface TargetResult {
  readonly name: string;
  readonly figure: string;
  readonly limit: string;
  readonly pass: boolean;
}

export function target(
  name: string,
  value: number,
  op: "<=" | ">=",
  limit: number,
  figure: string,
  unit = "",
): TargetResult {
  const pass = Number.isFinite(value) && (op === "<=" ? value <= limit : value >= limit);
  return { name, figure, limit: `${op} ${limit}${unit}`, pass };
}

/** A target on a ratio's per-round median, shown with its spread. */
export function ratioTarget(name: string, s: Spread, op: "<=" | ">=", limit: number): TargetResult {
  return target(name, s.median, op, limit, showSpread(s), "×");
}

export function showTarget(t: TargetResult): string {
  return `${t.pass ? "PASS" : "FAIL"}  ${t.name.padEnd(52)} ${t.figure}   target ${t.limit}`;
}

/** Milliseconds, right-aligned. */
export function ms(x: number, digits = 3): string {
  return x.toFixed(digits).padStart(9);
}

/** Times `n` sequential calls of `fn` after `warmup` untimed ones; samples in ms. */
export async function timeCalls(fn: () => Promise<unknown>, n: number, warmup = 0): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}
