import { WebClient } from "@slack/web-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { ChannelMembership, type ChannelRoster } from "../../src/membership/channel-membership.js";
import { SlackMembership } from "../../src/slack/membership.js";
import { WebClientSlackApi } from "../../src/slack/slack-api.js";
import { singleSlackApi } from "../../src/slack/tenant-api.js";
import { type FakeSlack, startFakeSlack } from "../fixtures/slack/fake-slack-api.js";

// Membership is read per channel (issue 13 item 8): one paginated conversations.members per channel
// per cache period answers every user, concurrent misses share it, failures fail closed and are not
// kept, and the roster cache is bounded in channels, in member ids and in age.

/** A roster that counts reads and can be held open or made to fail. */
class Roster implements ChannelRoster {
  reads = 0;
  fail: Error | undefined;
  private gate: Promise<void> | undefined;
  private release: (() => void) | undefined;
  constructor(private readonly members_: Map<string, string[]>) {}
  hold(): void {
    this.gate = new Promise((r) => (this.release = r));
  }
  open(): void {
    this.release?.();
    this.gate = undefined;
  }
  set(channel: string, ids: string[]): void {
    this.members_.set(channel, ids);
  }
  async members(_team: string, channel: string): Promise<readonly string[]> {
    this.reads++;
    const snapshot = [...(this.members_.get(channel) ?? [])];
    if (this.gate) await this.gate;
    if (this.fail) throw this.fail;
    return snapshot;
  }
}

describe("ChannelMembership against the fake Slack Web API", () => {
  let fake: FakeSlack;
  beforeEach(async () => {
    // Two members a page: a roster of six is three pages.
    fake = await startFakeSlack({ membersPageSize: 2 });
  });
  afterEach(async () => {
    await fake.close();
  });

  it("reads each channel once per cache period, all pages, whatever the number of users asked about", async () => {
    fake.setMembers("C1", ["U01", "U02", "U03", "U04", "U05", "U06"]);
    fake.setMembers("C2", ["U01"]);
    const api = new WebClientSlackApi(
      new WebClient(fake.botToken, { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } }),
    );
    const clock = new ManualClock();
    const m = new ChannelMembership(new SlackMembership(singleSlackApi(api)), clock, { ttlMs: 60_000 });
    const answers = [];
    for (const u of ["U01", "U02", "U03", "U04", "U05", "U06", "U07", "U08"])
      answers.push(await m.isMember("T1", "C1", u));
    expect(answers).toEqual([true, true, true, true, true, true, false, false]);
    // One roster read = three pages, not one read per user.
    expect(fake.callsOf("conversations.members")).toHaveLength(3);
    expect(await m.isMember("T1", "C2", "U02")).toBe(false);
    expect(fake.callsOf("conversations.members")).toHaveLength(4);
    clock.advance(60_001);
    expect(await m.isMember("T1", "C1", "U06")).toBe(true);
    expect(fake.callsOf("conversations.members")).toHaveLength(7);
  });

  it("fails closed when Slack fails, and asks again next time", async () => {
    fake.setMembers("C1", ["U01"]);
    const api = new WebClientSlackApi(
      new WebClient(fake.botToken, { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } }),
    );
    const m = new ChannelMembership(new SlackMembership(singleSlackApi(api)), new ManualClock());
    fake.setFailing("conversations.members", "ratelimited");
    await expect(m.isMember("T1", "C1", "U01")).rejects.toThrow();
    fake.clearFailing();
    expect(await m.isMember("T1", "C1", "U01")).toBe(true);
    expect(await m.isMember("T1", "C9", "U01").catch(() => "refused")).toBe("refused");
  });
});

describe("ChannelMembership", () => {
  it("concurrent misses for one channel share one read", async () => {
    const roster = new Roster(new Map([["C1", ["UA", "UB"]]]));
    const m = new ChannelMembership(roster, new ManualClock());
    roster.hold();
    const asks = ["UA", "UB", "UC", "UA"].map((u) => m.isMember("T", "C1", u));
    roster.open();
    expect(await Promise.all(asks)).toEqual([true, true, false, true]);
    expect(roster.reads).toBe(1);
  });

  it("a failed read reaches every waiter and is not kept", async () => {
    const roster = new Roster(new Map([["C1", ["UA"]]]));
    const m = new ChannelMembership(roster, new ManualClock());
    roster.fail = new Error("slack down");
    roster.hold();
    const asks = [m.isMember("T", "C1", "UA"), m.isMember("T", "C1", "UA")].map((p) =>
      p.catch((e: Error) => e.message),
    );
    roster.open();
    expect(await Promise.all(asks)).toEqual(["slack down", "slack down"]);
    roster.fail = undefined;
    expect(await m.isMember("T", "C1", "UA")).toBe(true);
    expect(roster.reads).toBe(2);
  });

  it("invalidate forgets one channel, and a read already running when it came is not kept", async () => {
    const roster = new Roster(
      new Map([
        ["C1", ["UA"]],
        ["C2", ["UA"]],
      ]),
    );
    const m = new ChannelMembership(roster, new ManualClock());
    await m.isMember("T", "C1", "UA");
    await m.isMember("T", "C2", "UA");
    roster.hold();
    roster.set("C1", ["UA"]);
    m.invalidate("T", "C1");
    const running = m.isMember("T", "C1", "UA");
    // UA leaves while the read (taken before the leave) is in flight.
    roster.set("C1", []);
    m.invalidate("T", "C1");
    roster.open();
    expect(await running).toBe(true);
    expect(await m.isMember("T", "C1", "UA")).toBe(false);
    expect(await m.isMember("T", "C2", "UA")).toBe(true);
    expect(roster.reads).toBe(4);
  });

  it("holds at most maxChannels rosters and maxMembers ids, and never serves one older than the TTL", async () => {
    const roster = new Roster(
      new Map([
        ["C1", ["UA"]],
        ["C2", ["UA"]],
        ["C3", ["UA"]],
        ["BIG", ["U1", "U2", "U3", "U4", "U5"]],
      ]),
    );
    const clock = new ManualClock();
    const m = new ChannelMembership(roster, clock, { ttlMs: 1_000, maxChannels: 2, maxMembers: 4 });
    for (const c of ["C1", "C2", "C3"]) await m.isMember("T", c, "UA");
    expect(m.size).toBe(2);
    await m.isMember("T", "C1", "UA"); // C1 was the least recently used: dropped, read again
    expect(roster.reads).toBe(4);
    // A roster over the id budget answers its caller but is not kept.
    expect(await m.isMember("T", "BIG", "U5")).toBe(true);
    expect(await m.isMember("T", "BIG", "U1")).toBe(true);
    expect(roster.reads).toBe(6);
    expect(m.size).toBeLessThanOrEqual(2);
    clock.advance(1_001);
    m.sweep();
    expect(m.size).toBe(0);
  });
});
