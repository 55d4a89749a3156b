// The seal every PostgreSQL signal travels in (src/cluster/signal-seal.ts): what another role on the
// server sees is ciphertext, and only a fresh, unseen signal sealed under a shared key opens.
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { MAX_AGE_MS, MAX_SEALED_BYTES, SignalSeal } from "../../src/cluster/signal-seal.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { newKeyB64 } from "../support/foundation.js";

const wire = JSON.stringify({ topic: "call_cancelled", payload: { sessionId: "sess-canary-42", requestId: 3 } });

describe("SignalSeal", () => {
  it("seals without the ids in clear and opens once", () => {
    const clock = new ManualClock();
    const ring = KeyRing.fromBase64(newKeyB64());
    const [a, b] = [new SignalSeal(ring, clock), new SignalSeal(ring, clock)];
    const text = a.seal(wire);
    expect(text).not.toContain("sess-canary-42");
    expect(text).not.toContain("call_cancelled");
    expect(b.open(text)).toEqual({ wire });
    expect(b.open(text)).toEqual({ dropped: "replayed" });
  });

  it("drops a signal older or further ahead than MAX_AGE_MS, and what no key of the ring opens", () => {
    const clock = new ManualClock();
    const ring = KeyRing.fromBase64(newKeyB64());
    const sender = new SignalSeal(ring, clock);
    const old = sender.seal(wire);
    clock.advance(MAX_AGE_MS + 1);
    const receiver = new SignalSeal(ring, clock);
    expect(receiver.open(old)).toEqual({ dropped: "stale" });
    const ahead = new SignalSeal(ring, new ManualClock(clock.now() + MAX_AGE_MS + 1)).seal(wire);
    expect(receiver.open(ahead)).toEqual({ dropped: "stale" });
    expect(receiver.open(new SignalSeal(KeyRing.fromBase64(newKeyB64()), clock).seal(wire))).toEqual({
      dropped: "unknown_key",
    });
    expect(receiver.open(wire)).toEqual({ dropped: "malformed" });
    expect(receiver.open("x".repeat(MAX_SEALED_BYTES + 1))).toEqual({ dropped: "malformed" });
  });

  it("a box relabelled with another key id of the ring does not open under it", () => {
    const clock = new ManualClock();
    const k1 = newKeyB64();
    const k2 = newKeyB64();
    const ring = KeyRing.fromBase64(k2, [k1]);
    const sealed = JSON.parse(new SignalSeal(KeyRing.fromBase64(k1), clock).seal(wire)) as { b: { k: string }[] };
    sealed.b[0]!.k = ring.primaryId;
    expect(new SignalSeal(ring, clock).open(JSON.stringify(sealed))).toEqual({ dropped: "forged" });
  });
});
