import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MAX_CACHED_MACS, MAX_PARSED_DIGESTS, SessionTokenDigests } from "../../src/server/session-token.js";
import { KeyRing } from "../../src/vault/keyring.js";

// The digest an MCP session keeps of the host token that opened it: keyed (no key, no check), never
// the token, and still verifiable after a key rotation while the previous key is configured.

const TOKEN = `host-${randomBytes(16).toString("hex")}`;

describe("SessionTokenDigests", () => {
  it("is a keyed digest naming its key, never the token; the same key gives the same digest on every replica", () => {
    const key = randomBytes(32);
    const d = new SessionTokenDigests(new KeyRing(key)).digest(TOKEN);
    expect(d).toMatch(/^k_[0-9a-f]{16}:[0-9a-f]{64}$/);
    expect(d).not.toContain(TOKEN);
    expect(new SessionTokenDigests(new KeyRing(key)).digest(TOKEN)).toBe(d);
    // Another key, another MAC: without the key the digest cannot be recomputed from a guessed token.
    const other = new SessionTokenDigests(new KeyRing(randomBytes(32))).digest(TOKEN);
    expect(other.slice(other.indexOf(":"))).not.toBe(d.slice(d.indexOf(":")));
  });

  it("matches the opening token only; missing, malformed or unknown-key digests are unverifiable", () => {
    const ring = new KeyRing(randomBytes(32));
    const s = new SessionTokenDigests(ring);
    const d = s.digest(TOKEN);
    expect(s.check(d, TOKEN)).toBe("match");
    expect(s.check(d, `${TOKEN}x`)).toBe("mismatch");
    for (const bad of [
      undefined,
      "",
      "nokey",
      `${d}00`,
      `k_0000000000000000:${d.slice(d.indexOf(":") + 1)}`,
      `:${"a".repeat(64)}`,
    ])
      expect(s.check(bad, TOKEN), String(bad)).toBe("unverifiable");
  });

  it("after a rotation, a digest made under the previous key still verifies while that key is configured", () => {
    const old = randomBytes(32);
    const before = new SessionTokenDigests(new KeyRing(old)).digest(TOKEN);
    const rotated = new SessionTokenDigests(new KeyRing(randomBytes(32), [old]));
    expect(rotated.check(before, TOKEN)).toBe("match");
    expect(rotated.check(before, "another-token")).toBe("mismatch");
    expect(new SessionTokenDigests(new KeyRing(randomBytes(32))).check(before, TOKEN)).toBe("unverifiable");
  });

  it("keeps at most MAX_CACHED_MACS token MACs and answers the same past the bound", () => {
    const s = new SessionTokenDigests(new KeyRing(randomBytes(32)));
    const d = s.digest(TOKEN);
    for (let i = 0; i < MAX_CACHED_MACS * 2 + 3; i++) {
      expect(s.check(d, `${TOKEN}-${i}`)).toBe("mismatch");
      expect(s.cachedMacs).toBeLessThanOrEqual(MAX_CACHED_MACS);
    }
    expect(s.check(d, TOKEN)).toBe("match");
    expect(s.check(d, TOKEN)).toBe("match");
  });

  it("keeps at most MAX_PARSED_DIGESTS stored digests decoded and answers the same past the bound", () => {
    const ring = new KeyRing(randomBytes(32));
    const s = new SessionTokenDigests(ring);
    const d = s.digest(TOKEN);
    const keyId = d.slice(0, d.indexOf(":"));
    for (let i = 0; i < MAX_PARSED_DIGESTS * 2 + 3; i++) {
      const other = `${keyId}:${randomBytes(32).toString("hex")}`;
      expect(s.check(other, TOKEN)).toBe("mismatch");
      expect(s.check(`${other}0${i}`, TOKEN)).toBe("unverifiable");
      expect(s.parsedDigests).toBeLessThanOrEqual(MAX_PARSED_DIGESTS);
    }
    // A decoded digest is still checked against its key and the presented token every time.
    expect(s.check(d, TOKEN)).toBe("match");
    expect(s.check(d, TOKEN)).toBe("match");
    expect(s.check(d, `${TOKEN}x`)).toBe("mismatch");
    expect(new SessionTokenDigests(new KeyRing(randomBytes(32))).check(d, TOKEN)).toBe("unverifiable");
  });
});
