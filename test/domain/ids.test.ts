import { describe, expect, it } from "vitest";
import { newCallId, newId, randomId } from "../../src/domain/ids.js";

// Identifiers are drawn from a batch of CSPRNG bytes: across many batches every id is fresh and of the same form.

describe("random ids", () => {
  it("are 16 base64url characters (96 bits), distinct across many refills of the batch", () => {
    const ids = Array.from({ length: 10_000 }, () => randomId());
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("carry their readable prefix", () => {
    expect(newId("conn")).toMatch(/^conn_[A-Za-z0-9_-]{16}$/);
  });
});

describe("call ids", () => {
  it("are the start time in 12 hex digits, then 96 random bits", () => {
    const at = Date.UTC(2026, 11, 4, 12, 0, 0, 123);
    const id = newCallId(at);
    expect(id).toMatch(/^call_[0-9a-f]{12}[A-Za-z0-9_-]{16}$/);
    expect(Number.parseInt(id.slice(5, 17), 16)).toBe(at);
  });

  // The prefix is lowercase hex of one length: byte order (SQLite's BINARY, JavaScript's sort) and a
  // database collation order it alike.
  it("sort by their calls' start as text, and are distinct within one millisecond", () => {
    const times = [0, 1, 15, 16, 255, 4096, Date.UTC(2001, 0, 1), Date.UTC(2026, 0, 1), Date.UTC(2099, 0, 1)];
    const ids = times.map((t) => newCallId(t));
    expect([...ids].sort()).toEqual(ids);
    const same = Array.from({ length: 1_000 }, () => newCallId(1_700_000_000_000));
    expect(new Set(same).size).toBe(same.length);
    for (const id of same) expect(id.slice(0, 17)).toBe(`call_${(1_700_000_000_000).toString(16).padStart(12, "0")}`);
  });

  it("default to the wall clock", () => {
    const before = Date.now();
    const t = Number.parseInt(newCallId().slice(5, 17), 16);
    expect(t).toBeGreaterThanOrEqual(before);
    expect(t).toBeLessThanOrEqual(Date.now());
  });
});
