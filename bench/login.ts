// npm run bench:login — the login live view with real Chromium on both sides (bench/sections/login.ts):
// link open → first frame drawn from a warm and a cold viewer page, the split of that time by step,
// blank first frames, input → changed frame while the spare refills and while it does not, and
// Chromium processes and PSS per login. BENCH_LOGIN_RUNS sets the runs per mode (default 10),
// BENCH_LOGIN_MODES the modes (default "warm,cold"; "nospare" adds logins without the spare);
// --json prints the figures as JSON.
import { LOGIN_MODES, type LoginFigures, type LoginMode, measureLogin } from "./sections/login.js";

const RUNS = Number(process.env.BENCH_LOGIN_RUNS ?? 10);
const MODES = (process.env.BENCH_LOGIN_MODES ?? "warm,cold")
  .split(",")
  .filter((m): m is LoginMode => (LOGIN_MODES as readonly string[]).includes(m));

const LABEL: Record<LoginMode, string> = {
  warm: "spare, warm viewer page",
  cold: "spare, cold viewer page",
  nospare: "no spare, warm viewer page",
};
const TARGET_MS: Record<LoginMode, number | undefined> = { warm: 450, cold: 800, nospare: undefined };

/** The figures as lines, with PASS/FAIL against the issue's targets. */
export function loginLines(r: LoginFigures): string[] {
  const f = (x: number | undefined) => (x ?? Number.NaN).toFixed(0).padStart(5);
  const lines = [
    `login live view: ${r.runs} logins per mode, alternating, real Chromium on both sides; ${r.cpus} CPUs, load average ${r.loadavgBefore[0]?.toFixed(1)} before, ${r.loadavgAfter[0]?.toFixed(1)} after`,
  ];
  for (const [m, x] of Object.entries(r.modes) as [LoginMode, NonNullable<LoginFigures["modes"][LoginMode]>][]) {
    lines.push(
      `  ${LABEL[m]}: link → first frame drawn p50 ${f(x.firstFrame.p50)} ms  p95 ${f(x.firstFrame.p95)} ms  (min ${f(x.firstFrame.min)}, max ${f(x.firstFrame.max)}); blank first frames ${x.blankFirstFrames}/${x.firstFrame.n}`,
      `    split (p50 ms from goto): ${Object.entries(x.split)
        .sort((a, b) => (a[1] ?? 0) - (b[1] ?? 0))
        .map(([k, v]) => `${k} ${v?.toFixed(0)}`)
        .join(", ")}`,
      `    input → changed frame p50 ${f(x.inputIdle.p50)} ms idle (n=${x.inputIdle.n}), ${f(x.inputRefilling.p50)} ms while the spare refills (n=${x.inputRefilling.n})`,
      `    Chromium processes ${f(x.procs.p50)}   PSS ${f(x.pssMb.p50)} MB (min ${f(x.pssMb.min)}, max ${f(x.pssMb.max)})`,
    );
  }
  for (const [m, x] of Object.entries(r.modes) as [LoginMode, NonNullable<LoginFigures["modes"][LoginMode]>][]) {
    const limit = TARGET_MS[m];
    if (limit === undefined) continue;
    const ok = (b: boolean) => (b ? "PASS" : "FAIL");
    lines.push(
      `  ${ok(x.firstFrame.p50 <= limit)} ${LABEL[m]}: first frame p50 ≤ ${limit} ms (${f(x.firstFrame.p50)} ms)`,
    );
    lines.push(`  ${ok(x.blankFirstFrames === 0)} ${LABEL[m]}: no blank first frame (${x.blankFirstFrames})`);
    const worst = Math.max(x.inputIdle.p50, Number.isNaN(x.inputRefilling.p50) ? 0 : x.inputRefilling.p50);
    lines.push(`  ${ok(worst <= 60)} ${LABEL[m]}: input → changed frame p50 ≤ 60 ms, refill or not (${f(worst)} ms)`);
  }
  return lines;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await measureLogin({ runs: RUNS, modes: MODES, say: (l) => process.stderr.write(`${l}\n`) });
  if (process.argv.includes("--json")) process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
  else process.stdout.write(`${loginLines(r).join("\n")}\n`);
}
