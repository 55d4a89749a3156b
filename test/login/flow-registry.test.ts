// The flow registry's deadlines and grace periods run on the injected Clock: a ManualClock moves
// them without any real waiting, and a flow's viewer holds its grace period off.
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { parseRegistry } from "../../src/config/registry.js";
import { type Flow, FlowRegistry } from "../../src/login/flow-registry.js";
import type { LoginSession } from "../../src/store/records.js";

const registry = parseRegistry(
  {
    services: {
      cookiesvc: {
        transport: { type: "stdio", command: "true", credentialEnv: { C: "{{cookie_header}}" } },
        capture: { strategy: "cookie", startUrl: "https://idp.example/login", requiredCookies: ["s"] },
        loginDomains: ["idp.example"],
      },
    },
  },
  "test",
);
const service = registry.get("cookiesvc")!;

function session(clock: ManualClock, id: string, ttlMs: number): LoginSession {
  const now = clock.now();
  return {
    id,
    tokenHash: "h",
    teamId: "T1",
    userId: "U1",
    service: "cookiesvc",
    scope: "user",
    channelId: null,
    threadTs: null,
    status: "opened",
    createdAt: now,
    expiresAt: now + ttlMs,
    openedAt: now,
    endedAt: null,
    connectionId: null,
    viewerHash: "v",
  };
}

function setup(graceMs: number) {
  const clock = new ManualClock();
  const events: string[] = [];
  const flows = new FlowRegistry({
    maxConcurrent: 2,
    graceMs,
    clock,
    timers: {
      onTimeout: (f: Flow) => events.push(`timeout ${f.session.id}`),
      onAbandoned: (f: Flow) => events.push(`abandoned ${f.session.id}`),
    },
  });
  return { clock, events, flows };
}

describe("FlowRegistry on a ManualClock", () => {
  it("a flow nobody watches is abandoned when its grace period has passed on the clock, not before", () => {
    const { clock, events, flows } = setup(60_000);
    flows.start(session(clock, "a", 600_000), service, flows.takeSlot(service, "T1") === true);
    clock.advance(59_999);
    expect(events).toEqual([]);
    clock.advance(1);
    expect(events).toEqual(["abandoned a"]);
  });

  it("a viewer holds the grace period off; its socket closing starts it again from that moment", () => {
    const { clock, events, flows } = setup(60_000);
    flows.start(session(clock, "a", 600_000), service, true);
    const viewer = flows.claim("a");
    expect(viewer).toEqual({ sessionId: "a" });
    expect(flows.claim("a")).toBe("busy");
    clock.advance(120_000);
    expect(events).toEqual([]);
    if (typeof viewer === "string") throw new Error("not claimed");
    flows.detach(viewer);
    clock.advance(59_999);
    expect(events).toEqual([]);
    clock.advance(1);
    expect(events).toEqual(["abandoned a"]);
  });

  it("the deadline fires at the session's expiry on the clock; removing a flow cancels all its timers", () => {
    const { clock, events, flows } = setup(60_000);
    flows.start(session(clock, "a", 30_000), service, true);
    flows.start(session(clock, "b", 30_000), service, true);
    flows.claim("a");
    flows.claim("b");
    flows.remove(flows.get("b")!);
    expect(clock.pendingTimers()).toBe(1);
    clock.advance(30_000);
    expect(events).toEqual(["timeout a"]);
    flows.remove(flows.get("a")!);
    expect(clock.pendingTimers()).toBe(0);
  });
});

describe("login slots per team (issue 20 item 9)", () => {
  it("a team at its share of browser slots is refused while another team still gets one; a slot given back is the team's again", () => {
    const clock = new ManualClock();
    const refused: string[] = [];
    const flows = new FlowRegistry({
      maxConcurrent: 3,
      maxPerTeam: 1,
      graceMs: 60_000,
      clock,
      refused: (l) => void refused.push(l),
      timers: { onTimeout: () => {}, onAbandoned: () => {} },
    });
    expect(flows.takeSlot(service, "TA")).toBe(true);
    const a = flows.start({ ...session(clock, "a", 600_000), teamId: "TA" }, service, true);
    expect(flows.takeSlot(service, "TA")).toBe("full");
    expect(refused).toEqual(["logins"]);
    expect(flows.takeSlot(service, "TB")).toBe(true);
    expect(flows.slotsInUse).toBe(2);
    expect(flows.perTeam.teamsAtCap()).toBe(2);
    flows.remove(a);
    flows.release(a);
    expect(flows.takeSlot(service, "TA")).toBe(true);
    // A slot returned for a flow that never started is the team's again too.
    flows.returnSlot("TA");
    expect(flows.takeSlot(service, "TA")).toBe(true);
    expect(flows.slotsInUse).toBe(2);
  });
});
