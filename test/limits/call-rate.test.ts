import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { CallRateGate, type CallRateLimits, MemoryRateBuckets } from "../../src/limits/call-rate.js";
import type { LimitKind } from "../../src/limits/limit-kind.js";

const perMin = (n: number) => ({ burst: n, perMs: n / 60_000 });

function gate(limits: CallRateLimits, buckets = new MemoryRateBuckets()) {
  const clock = new ManualClock(1_000_000);
  const refused: LimitKind[] = [];
  return {
    clock,
    refused,
    buckets,
    gate: new CallRateGate({ buckets, limits, clock, refused: (l) => void refused.push(l) }),
  };
}

describe("call rate per user and per team", () => {
  it("a user over their rate is refused with a retry time; another user and another team are not", async () => {
    const { gate: g, clock, refused } = gate({ perUser: perMin(2), perTeam: perMin(100) });
    expect(await g.check("TA", "U1")).toEqual({ ok: true });
    expect(await g.check("TA", "U1")).toEqual({ ok: true });
    expect(await g.check("TA", "U1")).toEqual({ ok: false, limit: "call_rate_user", retryAt: clock.now() + 30_000 });
    expect(await g.check("TA", "U2")).toEqual({ ok: true });
    expect(await g.check("TB", "U1")).toEqual({ ok: true });
    expect(refused).toEqual(["call_rate_user"]);
    expect(g.atLimit()).toEqual({ users: 1, teams: 0 });
    clock.advance(30_000);
    expect(await g.check("TA", "U1")).toEqual({ ok: true });
    expect(g.atLimit()).toEqual({ users: 0, teams: 0 });
  });

  it("remembers who it refused until their retry time: the user, or the whole team when the team is over", async () => {
    const { gate: g, clock } = gate({ perUser: perMin(1), perTeam: perMin(3) });
    expect(g.refusedRecently("TA", "U1")).toBe(false);
    await g.check("TA", "U1");
    expect(g.refusedRecently("TA", "U1")).toBe(false);
    expect((await g.check("TA", "U1")).ok).toBe(false);
    expect(g.refusedRecently("TA", "U1")).toBe(true);
    expect(g.refusedRecently("TA", "U2")).toBe(false);
    await g.check("TA", "U2");
    await g.check("TA", "U3");
    expect((await g.check("TA", "U4")).ok).toBe(false);
    expect(g.refusedRecently("TA", "U9")).toBe(true);
    expect(g.refusedRecently("TB", "U1")).toBe(false);
    clock.advance(60_000);
    expect(g.refusedRecently("TA", "U1")).toBe(false);
    expect(g.refusedRecently("TA", "U9")).toBe(false);
  });

  it("a team over its rate refuses all its users; a user refused by their own rate does not drain the team's bucket", async () => {
    const { gate: g } = gate({ perUser: perMin(2), perTeam: perMin(3) });
    // U1 spends 2 of the team's 3, then hammers: refused by the user bucket, the team's last token stays.
    await g.check("TA", "U1");
    await g.check("TA", "U1");
    for (let i = 0; i < 10; i++) expect((await g.check("TA", "U1")).ok).toBe(false);
    expect(await g.check("TA", "U2")).toEqual({ ok: true });
    const over = await g.check("TA", "U3");
    expect(over.ok === false && over.limit).toBe("call_rate_team");
    // Team B is untouched by team A being at its limit.
    expect(await g.check("TB", "U3")).toEqual({ ok: true });
    expect(g.atLimit().teams).toBe(1);
  });

  it("in memory at most maxKeys buckets: a full one is forgotten to make room, a refilling one is not (fail closed)", async () => {
    const buckets = new MemoryRateBuckets(2);
    const rate = perMin(1);
    const t = (key: string, now: number) => buckets.take([{ key, rate }], now);
    expect(await t("a", 0)).toEqual({ granted: true });
    expect(await t("b", 0)).toEqual({ granted: true });
    // "a" is still refilling at 30 s: a third key is refused until "a" is full again (at 60 s).
    expect(await t("c", 30_000)).toEqual({ granted: false, refused: 0, retryAt: 60_000 });
    expect(buckets.size).toBe(2);
    // At 60 s "a" is full (equal to absent): it goes, "c" gets in, and "a" comes back full later.
    expect(await t("c", 60_000)).toEqual({ granted: true });
    expect(buckets.size).toBe(2);
    expect(await t("b", 60_000)).toEqual({ granted: true });
  });

  it("a new user's bucket refused by the team's rate is not kept: made-up user ids cannot fill the map", async () => {
    const buckets = new MemoryRateBuckets();
    const { gate: g } = gate({ perUser: perMin(5), perTeam: perMin(2) }, buckets);
    await g.check("TA", "U1");
    await g.check("TA", "U2");
    expect(buckets.size).toBe(3);
    for (let i = 0; i < 1_000; i++) expect((await g.check("TA", `UFAKE${i}`)).ok).toBe(false);
    expect(buckets.size).toBe(3);
  });
});
