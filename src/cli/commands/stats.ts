import { parseArgs } from "node:util";
import { OUTCOMES } from "../../activity/outcome.js";
import { readActivity } from "../../activity/read.js";
import { type ActivitySummary, type Latency, MAX_MINUTES } from "../../activity/summary.js";
import { type CliContext, UsageError } from "../context.js";
import { formatTable, formatTime } from "../format.js";

// `stats`: the console's Activity figures as text, read from the store as every CLI command reads
// it: calls per minute by outcome and latency p50/p95 over the last hour (or the hour ending at --until).

export const STATS_HELP = `slaude-connect stats [--minutes N] [--until T] [--team T] [--json]

  Calls per minute by outcome and their latency over the last hour, from the audit log: own (ran
  on the caller's own connection), borrowed (ran on someone else's: a grant, an owner's approval,
  a shared connection), refused (the broker said no before anything ran), failed (let through,
  then failed: the vendor's error, an unusable credential, a tool error). Latency p50/p95 is the
  nearest-rank percentile of the durations of the calls that were let through (approval waits
  included), for the whole window and per minute.
  --minutes N   the window in whole minutes, 1..${MAX_MINUTES} (default ${MAX_MINUTES}), ending with the current minute
  --until T     end the window with the minute holding T (an ISO time) instead of now
  --team T      one team only (default: every team in the store)
  --json        the figures as one JSON object (every minute included)
  Minutes without calls are left out of the table.`;

function minutesOf(v: string | undefined): number {
  if (v === undefined) return MAX_MINUTES;
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1 || n > MAX_MINUTES)
    throw new UsageError(`--minutes: expected a whole number from 1 to ${MAX_MINUTES}, got ${JSON.stringify(v)}`);
  return n;
}

function untilOf(v: string | undefined, now: number): number {
  if (v === undefined) return now;
  const t = Date.parse(v);
  if (Number.isNaN(t) || !/^\d{4}-\d{2}-\d{2}T/.test(v))
    throw new UsageError(`--until: expected an ISO time like 2026-12-01T10:00:00Z, got ${JSON.stringify(v)}`);
  return t;
}

/** A duration in ms for the table, or "-" when no call was timed. */
export function ms(v: number | null): string {
  return v === null ? "-" : String(v);
}

/** The one-line latency figure shared by the text and the console: "p50 120 ms, p95 900 ms (10 calls)". */
export function latencyLine(l: Latency): string {
  if (!l.timed) return "no call was let through";
  return `p50 ${l.p50Ms} ms, p95 ${l.p95Ms} ms (${l.timed} call${l.timed === 1 ? "" : "s"})`;
}

/** The summary as the text `stats` prints. */
export function statsText(s: ActivitySummary, scope: string): string {
  const minutes = (s.until - s.since) / 60_000;
  const span = `${formatTime(s.since)} to ${formatTime(s.until)} (${minutes} minute${minutes === 1 ? "" : "s"})`;
  const lines = [
    `Calls from ${span}, ${scope}: ${s.calls}`,
    `  ${OUTCOMES.map((o) => `${o} ${s.totals[o]}`).join(", ")}`,
    `Latency: ${latencyLine(s.latency)}`,
  ];
  if (s.partialBefore !== null) {
    const upTo = formatTime(s.partialBefore);
    lines.push(`Partial: the window holds more calls than one read takes; rows up to ${upTo} may be missing.`);
  }
  const busy = s.minutes.filter((m) => OUTCOMES.some((o) => m.counts[o] > 0));
  const rows = busy.map((m) => [
    formatTime(m.start).slice(11, 16),
    ...OUTCOMES.map((o) => String(m.counts[o])),
    ms(m.p50Ms),
    ms(m.p95Ms),
  ]);
  lines.push("", formatTable(["MINUTE", "OWN", "BORROWED", "REFUSED", "FAILED", "P50_MS", "P95_MS"], rows));
  return lines.join("\n");
}

/** `stats`: the Activity figures of the last hour (or the window asked for). */
export async function statsCommand(ctx: CliContext, argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      minutes: { type: "string" },
      until: { type: "string" },
      team: { type: "string" },
      json: { type: "boolean" },
    },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length)
    throw new UsageError(`slaude-connect stats: unexpected argument "${positionals[0]}" (see slaude-connect --help)`);
  const minutes = minutesOf(values.minutes);
  const now = untilOf(values.until, ctx.clock.now());
  const team = values.team;
  const summary = await readActivity(ctx.store.audit, {
    now,
    minutes,
    ...(team === undefined ? {} : { teamId: team }),
  });
  if (values.json) ctx.out(JSON.stringify(summary));
  else ctx.out(statsText(summary, team === undefined ? "every team" : `team ${team}`));
  return 0;
}
