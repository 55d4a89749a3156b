// The local table of MCP sessions on its own: idle expiry on the injected clock (the idle time
// included: a session unused for exactly idleMs is expired), busy sessions never expire, recency
// decides which idle session makes room, and the table never holds more than maxSessions.
import http from "node:http";
import net from "node:net";
import { McpServer, WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { createLogger } from "../../src/log/logger.js";
import { type McpSession, SessionTable } from "../../src/server/mcp-sessions.js";

const IDLE = 60_000;

function session(id: string, teamId = "T1"): McpSession & { closes: number } {
  const server = new McpServer({ name: "table-test", version: "1" });
  const s = {
    id,
    transport: new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => id }),
    server,
    thread: { teamId, channelId: "C1", threadTs: "1.1" },
    threadHeader: `${teamId}/C1/1.1`,
    tokenDigest: "k:00",
    busy: 0,
    closed: false,
    closes: 0,
  };
  const close = server.close.bind(server);
  server.close = async () => {
    s.closes++;
    await close();
  };
  return s;
}

function table(maxSessions: number, clock: ManualClock): SessionTable {
  return new SessionTable(
    { maxSessions, idleMs: IDLE },
    clock,
    createLogger("error", () => {}),
  );
}

describe("SessionTable", () => {
  it("expires a session unused for idleMs (boundary included) on lookup and sweep, never a busy one", () => {
    const clock = new ManualClock();
    const t = table(10, clock);
    const a = session("a");
    const b = session("b");
    const busy = session("busy");
    t.add("a", a);
    t.add("b", b);
    t.add("busy", busy);
    busy.busy = 1;
    clock.advance(IDLE - 1);
    expect(t.get("a")).toBe(a);
    clock.advance(1);
    expect(t.get("a")).toBeUndefined();
    expect(a.closed).toBe(true);
    expect(a.closes).toBe(1);
    expect(t.sweepIdle()).toBe(1); // b
    expect(b.closes).toBe(1);
    clock.advance(10 * IDLE);
    expect(t.get("busy")).toBe(busy);
    expect(t.sweepIdle()).toBe(0);
    expect(t.ids()).toEqual(["busy"]);
  });

  it("a use restarts the idle clock: only the unused session expires", () => {
    const clock = new ManualClock();
    const t = table(10, clock);
    const a = session("a");
    const b = session("b");
    t.add("a", a);
    t.add("b", b);
    clock.advance(IDLE / 2);
    const res = new http.ServerResponse(new http.IncomingMessage(new net.Socket()));
    t.track("a", a, res, false);
    clock.advance(IDLE / 2);
    expect(t.sweepIdle()).toBe(1);
    expect(t.get("a")).toBe(a);
    expect(t.get("b")).toBeUndefined();
  });

  it("reserve makes room by closing the least recently used idle session; refuses when all are busy", () => {
    const clock = new ManualClock();
    const t = table(2, clock);
    const a = session("a");
    const b = session("b");
    t.add("a", a);
    clock.advance(1);
    t.add("b", b);
    clock.advance(1);
    t.add("a", a); // a is now the most recently used
    expect(t.ids()).toEqual(["a", "b"]);
    expect(t.reserve()).toBe(true);
    expect(b.closed).toBe(true);
    expect(t.ids()).toEqual(["a"]);
    t.release();
    const c = session("c");
    t.add("c", c);
    a.busy = 1;
    c.busy = 1;
    expect(t.reserve()).toBe(false);
    expect(t.size).toBe(2);
  });

  it("never holds more than maxSessions: adding past the cap closes the least recently used", () => {
    const clock = new ManualClock();
    const t = table(3, clock);
    const all = ["a", "b", "c", "d", "e"].map((id) => session(id));
    for (const s of all) {
      t.add(s.id, s);
      expect(t.size).toBeLessThanOrEqual(3);
    }
    expect(t.ids()).toEqual(["e", "d", "c"]);
    expect(all.map((s) => s.closed)).toEqual([true, true, false, false, false]);
    // Adding a held id again is a use, not a new session.
    t.add("c", all[2]!);
    expect(t.size).toBe(3);
    expect(all[2]!.closes).toBe(0);
  });

  it("remove forgets a session that closed on its own without closing it again", () => {
    const clock = new ManualClock();
    const t = table(3, clock);
    const a = session("a");
    t.add("a", a);
    t.remove("a", a);
    expect(t.size).toBe(0);
    expect(a.closes).toBe(0);
  });
});
