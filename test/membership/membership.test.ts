import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { CachedMembership, type MembershipSource } from "../../src/membership/membership.js";

// The membership cache is bounded in count (least recently used dropped first) and in age (expired
// answers are never served, and a sweep removes them without a new question).

/** A membership source that answers yes and counts how often it was asked. */
class CountingSource implements MembershipSource {
  asked = 0;
  async isMember(): Promise<boolean> {
    this.asked++;
    return true;
  }
}

describe("CachedMembership", () => {
  it("holds at most `max` answers, dropping the least recently used one", async () => {
    const inner = new CountingSource();
    const m = new CachedMembership(inner, new ManualClock(), 60_000, 2);
    await m.isMember("T", "C", "UA");
    await m.isMember("T", "C", "UB");
    await m.isMember("T", "C", "UA"); // hit: UB is now the least recently used
    await m.isMember("T", "C", "UC"); // evicts UB
    expect(inner.asked).toBe(3);
    expect(m.size).toBe(2);
    await m.isMember("T", "C", "UA");
    expect(inner.asked).toBe(3);
    await m.isMember("T", "C", "UB");
    expect(inner.asked).toBe(4);
  });

  it("never serves an answer older than the TTL, and a sweep drops expired answers nobody asks for again", async () => {
    const clock = new ManualClock();
    const inner = new CountingSource();
    const m = new CachedMembership(inner, clock, 1_000, 100);
    for (const u of ["UA", "UB", "UC"]) await m.isMember("T", "C", u);
    clock.advance(999);
    await m.isMember("T", "C", "UA");
    expect(inner.asked).toBe(3);
    clock.advance(2);
    await m.isMember("T", "C", "UA");
    expect(inner.asked).toBe(4);
    // UB and UC expired; nobody asks again: the sweep removes them anyway.
    m.sweep();
    expect(m.size).toBe(1);
  });

  it("invalidate forgets one channel's answers only", async () => {
    const inner = new CountingSource();
    const m = new CachedMembership(inner, new ManualClock());
    await m.isMember("T", "C1", "UA");
    await m.isMember("T", "C2", "UA");
    m.invalidate("T", "C1");
    await m.isMember("T", "C1", "UA");
    await m.isMember("T", "C2", "UA");
    expect(inner.asked).toBe(3);
  });
});
