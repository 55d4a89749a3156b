import { describe, expect, it } from "vitest";
import { newId, randomId } from "../../src/domain/ids.js";

// Identifiers are drawn from a batch of CSPRNG bytes: across many batches every id is fresh and of the same form.

describe("random ids", () => {
  it("are 16 base64url characters (96 bits), distinct across many refills of the batch", () => {
    const ids = Array.from({ length: 10_000 }, () => randomId());
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("carry their readable prefix", () => {
    expect(newId("call")).toMatch(/^call_[A-Za-z0-9_-]{16}$/);
  });
});
