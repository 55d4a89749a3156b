import { z } from "zod";

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Parses "90s", "30m", "8h", "7d" or a bare number of seconds into milliseconds; undefined if malformed. */
export function parseDurationMs(input: string | number): number | undefined {
  if (typeof input === "number") {
    // Checked after rounding: a tiny positive number of seconds must not become a 0 ms TTL.
    const ms = Number.isFinite(input) ? Math.round(input * 1000) : 0;
    return ms > 0 ? ms : undefined;
  }
  const m = /^(\d+)(s|m|h|d)?$/.exec(input.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = (m[2] ?? "s") as keyof typeof UNIT_MS;
  const ms = n * UNIT_MS[unit];
  return ms > 0 ? ms : undefined;
}

/** A zod schema for a positive duration ("8h" or seconds), producing milliseconds. */
export const durationMs = z.union([z.string(), z.number()]).transform((v, ctx) => {
  const ms = parseDurationMs(v);
  if (ms === undefined) {
    ctx.addIssue({
      code: "custom",
      message: `expected a positive duration like "90s", "30m", "8h", "7d" or seconds, got ${JSON.stringify(v)}`,
    });
    return z.NEVER;
  }
  return ms;
});
