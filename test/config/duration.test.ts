import { describe, expect, it } from "vitest";
import { durationMs, parseDurationMs } from "../../src/config/duration.js";
import { parseRegistry } from "../../src/config/registry.js";

describe("parseDurationMs", () => {
  it("parses units and bare seconds", () => {
    expect(parseDurationMs("90s")).toBe(90_000);
    expect(parseDurationMs("30m")).toBe(1_800_000);
    expect(parseDurationMs("8h")).toBe(28_800_000);
    expect(parseDurationMs("7d")).toBe(604_800_000);
    expect(parseDurationMs("45")).toBe(45_000);
    expect(parseDurationMs(" 2h ")).toBe(7_200_000);
    expect(parseDurationMs(1.5)).toBe(1_500);
  });

  it("rejects malformed, zero, negative and sub-millisecond durations", () => {
    for (const bad of ["", "h", "8w", "-5m", "1.5h", "0", "0s", "abc"])
      expect(parseDurationMs(bad), bad).toBeUndefined();
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 0.0001])
      expect(parseDurationMs(bad), String(bad)).toBeUndefined();
  });

  it("as a zod schema, reports the bad value's shape", () => {
    expect(durationMs.parse("8h")).toBe(28_800_000);
    const r = durationMs.safeParse("soon");
    expect(r.success).toBe(false);
  });

  it("a registry TTL that rounds to 0 ms is refused, not an instantly expiring connection", () => {
    const doc = {
      services: {
        svc: {
          transport: { type: "stdio", command: "x", credentialEnv: { T: "{{token}}" } },
          capture: { strategy: "paste" },
          ttl: 0.0001,
        },
      },
    };
    expect(() => parseRegistry(doc, "reg.json")).toThrow(/services\.svc\.ttl/);
  });
});
