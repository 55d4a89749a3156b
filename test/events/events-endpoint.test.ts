import { randomBytes } from "node:crypto";
import net from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { RunningApp } from "../../src/app/app.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import { ALICE, BOB, CAROL, mcpCall, THREAD } from "../integration/broker-harness.js";
import {
  boot as bootApp,
  callOf,
  connect,
  Opened,
  client as openClient,
  subscribe as openStream,
  THREAD_T2,
  TOKEN_T1,
  TOKEN_T2,
  TOKEN_UNBOUND,
  turn,
} from "./events-app.js";

// Issue 15 part 5: every mcp_call emits started → (progress) → (approval asked/decided) → ended on
// one internal stream, and GET /v1/events serves it as SSE to a host token bound to a team, that
// team's events only, with the same redaction as results. The real app over HTTP: real SDK clients
// on /mcp, the fixture vendor as real children, real SQLite, a real socket that stops reading.

const opened = new Opened();
afterEach(() => opened.closeAll());
const boot = (env: Record<string, string> = {}) => bootApp(opened, env);
const client = (app: RunningApp, token = TOKEN_T1, thread: ThreadRef = THREAD) =>
  openClient(opened, app, token, thread);
const subscribe = (app: RunningApp, token = TOKEN_T1) => openStream(opened, app, token);
const closers = opened.closers;

describe("GET /v1/events", () => {
  it("streams started → progress → ended for a call with progress, and approval asked → decided for a borrow, in order", async () => {
    const { app, approvals } = await boot();
    await connect(app, ALICE, `canary-${randomBytes(10).toString("hex")}`);
    const s = await subscribe(app);
    const c = await client(app);

    await turn(app, ALICE);
    const seen: string[] = [];
    const r = await mcpCall(
      c,
      { tool: "slow", args: { steps: 3, delayMs: 20 }, on_behalf_of: ALICE },
      { onprogress: (p) => void seen.push(p.message ?? "") },
    );
    expect(r.text).toContain("done");
    const own = await callOf(s, "slow");
    expect(own.events.map((e) => e.event)).toEqual([
      "call.started",
      "call.progress",
      "call.progress",
      "call.progress",
      "call.ended",
    ]);
    expect(own.events.slice(1, 4).map((e) => [e.data.progress, e.data.total, e.data.message])).toEqual([
      [1, 3, "step 1/3"],
      [2, 3, "step 2/3"],
      [3, 3, "step 3/3"],
    ]);
    expect(own.ended.data).toMatchObject({
      type: "call.ended",
      outcome: "ok",
      via: "own",
      teamId: "T1",
      channelId: THREAD.channelId,
      threadTs: THREAD.threadTs,
      callerUserId: ALICE,
      service: "vendor",
      truncated: false,
    });
    expect(own.ended.data.durationMs as number).toBeGreaterThan(0);
    expect(own.ended.data.vendorMs as number).toBeGreaterThan(0);
    // Ids increase along the stream.
    const ids = own.events.map((e) => Number(e.id));
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);

    // A borrow: Bob calls on Alice's connection, Alice is asked and allows it once.
    await turn(app, BOB);
    const borrowed = mcpCall(c, { tool: "read_item", args: { id: "7" }, on_behalf_of: BOB });
    const card = await approvals.nextCard();
    const asked = await s.waitFor((e) => e.event === "approval.asked");
    expect(asked.data).toMatchObject({ tool: "read_item", callerUserId: BOB, ownerUserId: ALICE, reason: "no_grant" });
    expect(await app.broker.approvals.decide(card.approval.id, card.approval.nonce, ALICE, "allowed_once")).toBe(
      "applied",
    );
    expect((await borrowed).structured.ranAs).toBe("approval_once");
    const borrow = await callOf(s, "read_item");
    expect(borrow.events.map((e) => e.event)).toEqual([
      "call.started",
      "approval.asked",
      "approval.decided",
      "call.ended",
    ]);
    expect(borrow.events[2]!.data).toMatchObject({
      decision: "allowed_once",
      ownerUserId: ALICE,
      connectionId: asked.data.connectionId,
    });
    expect(borrow.ended.data).toMatchObject({ outcome: "ok", via: "approval_once", callerUserId: BOB });

    // A refused call still starts and ends, with its code as the outcome.
    await mcpCall(c, { tool: "write_item", args: { id: "x", value: "y" }, on_behalf_of: ALICE });
    const refused = await callOf(s, "write_item");
    expect(refused.events.map((e) => [e.event, e.data.outcome ?? null])).toEqual([
      ["call.started", null],
      ["call.ended", "on_behalf_of_mismatch"],
    ]);
  });

  it("shows a host token only its own team's calls; an unbound, wrong or missing token and a foreign Host are refused", async () => {
    const { app } = await boot();
    await connect(app, ALICE, `canary-${randomBytes(10).toString("hex")}`);
    const t1 = await subscribe(app, TOKEN_T1);
    const t2 = await subscribe(app, TOKEN_T2);
    const c1 = await client(app, TOKEN_T1);
    await turn(app, ALICE);
    await mcpCall(c1, { tool: "slow", args: { steps: 2, delayMs: 5 }, on_behalf_of: ALICE }, { onprogress: () => {} });
    await callOf(t1, "slow");

    // A call in team T2 (refused: nobody is a member there) comes after every T1 event on the one
    // ordered stream: once T2's reader has it, it would already have had T1's, had they leaked.
    const c2 = await client(app, TOKEN_T2, THREAD_T2);
    await turn(app, CAROL, TOKEN_T2, THREAD_T2);
    await mcpCall(c2, { tool: "read_item", args: { id: "1" }, on_behalf_of: CAROL });
    const other = await callOf(t2, "read_item");
    expect(other.ended.data).toMatchObject({ teamId: "T2", outcome: "not_member", callerUserId: CAROL });
    expect(t2.events.every((e) => e.data.teamId === "T2")).toBe(true);
    expect(t2.events.map((e) => e.event)).toEqual(["call.started", "call.ended"]);
    expect(t2.raw).not.toContain(THREAD.channelId);
    expect(t1.events.some((e) => e.data.teamId === "T2")).toBe(false);

    const get = (headers: Record<string, string>) => fetch(`${app.url}/v1/events`, { headers });
    const unbound = await get({ authorization: `Bearer ${TOKEN_UNBOUND}` });
    expect(unbound.status).toBe(403);
    expect(((await unbound.json()) as { error: string }).error).toBe("token_not_bound_to_team");
    expect((await get({ authorization: "Bearer not-a-host-token" })).status).toBe(401);
    expect((await get({})).status).toBe(401);
    const foreign = await new Promise<string>((resolve) => {
      const sock = net.connect(app.port, "127.0.0.1", () =>
        sock.write(
          `GET /v1/events HTTP/1.1\r\nHost: evil.example:${app.port}\r\nAuthorization: Bearer ${TOKEN_T1}\r\nConnection: close\r\n\r\n`,
        ),
      );
      let got = "";
      sock.on("data", (d) => (got += d.toString()));
      sock.on("close", () => resolve(got));
    });
    expect(foreign).toMatch(/^HTTP\/1\.1 403/);
    expect(foreign).toContain("bad_host");
    expect(app.events.clientCount).toBe(2);
  });

  it("never carries the vendor's credential: a canary in progress messages and in the result is redacted before it is an event", async () => {
    const { app } = await boot();
    const canary = `canary-${randomBytes(12).toString("hex")}`;
    await connect(app, ALICE, canary);
    const s = await subscribe(app);
    const c = await client(app);
    await turn(app, ALICE);
    const r = await mcpCall(
      c,
      { tool: "progress_burst", args: { count: 3, size: 0, leak: true }, on_behalf_of: ALICE },
      { onprogress: () => {} },
    );
    expect(r.text).toContain("burst done with");
    expect(r.text).not.toContain(canary);
    const burst = await callOf(s, "progress_burst");
    const progress = burst.events.filter((e) => e.event === "call.progress");
    expect(progress).toHaveLength(3);
    // The message is there (redacted), not dropped.
    expect(progress.map((e) => e.data.message)).toEqual(
      progress.map((_, i) => expect.stringContaining(`burst ${i + 1}/3`)),
    );
    expect(s.raw).toContain("burst 1/3");
    expect(s.raw).not.toContain(canary);
    expect(s.raw).not.toContain(Buffer.from(canary).toString("base64"));
  });

  it("drops a subscriber that stops reading once its bounded backlog is full; calls keep running and other subscribers keep receiving", async () => {
    // The default backlog (1,000 events): room for a burst a healthy reader drains between reads.
    const { app, log } = await boot();
    await connect(app, ALICE, `canary-${randomBytes(10).toString("hex")}`);
    const healthy = await subscribe(app);
    // A subscriber that reads its headers and then never reads again.
    const stalled = net.connect(app.port, "127.0.0.1");
    closers.push(() => stalled.destroy());
    let head = "";
    let received = 0;
    const stalledClosed = new Promise<void>((resolve) => stalled.on("close", () => resolve()));
    await new Promise<void>((resolve) => {
      stalled.on("data", (d) => {
        received += d.length;
        if (head.includes(": subscribed")) return;
        head += d.toString();
        if (head.includes(": subscribed")) {
          stalled.pause();
          resolve();
        }
      });
      stalled.write(
        `GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1:${app.port}\r\nAuthorization: Bearer ${TOKEN_T1}\r\n\r\n`,
      );
    });
    expect(head).toMatch(/^HTTP\/1\.1 200/);
    expect(app.events.clientCount).toBe(2);

    const c = await client(app);
    await turn(app, ALICE);
    // About 9 MB of events: more than the kernel's socket buffers (about 4 MB here) and the backlog hold.
    const burst = await mcpCall(c, {
      tool: "progress_burst",
      args: { count: 12_000, size: 480, leak: false },
      on_behalf_of: ALICE,
    });
    expect(burst.text).toContain("burst done");
    await vi.waitFor(() => expect(app.events.clientCount).toBe(1), { timeout: 30_000, interval: 50 });
    expect(
      log.lines.some(
        (l) => l.includes("events stream dropped") && l.includes('"backlog":1001') && l.includes('"limit":1000'),
      ),
    ).toBe(true);
    // Calls keep running, and the healthy subscriber saw all of it.
    const after = await mcpCall(c, { tool: "echo", args: { text: "still here" }, on_behalf_of: ALICE });
    expect(after.text).toContain("still here");
    const b = await callOf(healthy, "progress_burst");
    expect(b.events.filter((e) => e.event === "call.progress")).toHaveLength(12_000);
    expect((await callOf(healthy, "echo")).ended.data.outcome).toBe("ok");
    // The dropped client's connection is closed once it reads what the kernel still held.
    stalled.on("error", () => {});
    stalled.resume();
    await stalledClosed;
    // It got the stream's start and then a cut: far less than the healthy reader's whole stream.
    expect(received).toBeLessThan(healthy.raw.length);
  }, 120_000);

  it("refuses a stream past SLAUDE_EVENTS_MAX_CLIENTS with 503, and takes one again when a stream closes", async () => {
    const { app } = await boot({ SLAUDE_EVENTS_MAX_CLIENTS: "2" });
    const a = await subscribe(app);
    await subscribe(app, TOKEN_T2);
    const third = await fetch(`${app.url}/v1/events`, { headers: { authorization: `Bearer ${TOKEN_T1}` } });
    expect(third.status).toBe(503);
    expect(((await third.json()) as { error: string }).error).toBe("too_many_event_streams");
    a.close();
    await vi.waitFor(() => expect(app.events.clientCount).toBe(1), { timeout: 10_000, interval: 20 });
    await subscribe(app);
    expect(app.events.clientCount).toBe(2);
  });

  it("one team at SLAUDE_EVENTS_MAX_CLIENTS_PER_TEAM gets 429 while another team's stream still opens (issue 20 item 9)", async () => {
    const { app } = await boot({ SLAUDE_EVENTS_MAX_CLIENTS: "4", SLAUDE_EVENTS_MAX_CLIENTS_PER_TEAM: "1" });
    const a = await subscribe(app);
    const second = await fetch(`${app.url}/v1/events`, { headers: { authorization: `Bearer ${TOKEN_T1}` } });
    expect(second.status).toBe(429);
    expect(second.headers.get("retry-after")).toBe("5");
    expect(((await second.json()) as { error: string; message: string }).message).toContain("for one team");
    // Team T2 is not held back by T1's streams: the deployment has room, and so has T2.
    await subscribe(app, TOKEN_T2);
    expect(app.events.clientCount).toBe(2);
    // Both teams hold their one stream: the gauge counts tenants, never names them.
    const atLimit = (await app.metrics.text()).body;
    expect(atLimit).toMatch(/slaude_tenants_at_limit\{limit="event_streams"\} 2/);
    expect(atLimit).not.toMatch(/T1|T2/);
    a.close();
    await vi.waitFor(() => expect(app.events.clientCount).toBe(1), { timeout: 10_000, interval: 20 });
    await subscribe(app);
    const metrics = await app.metrics.text();
    expect(metrics.body).toMatch(/slaude_limit_refusals_total\{limit="event_streams"\} 1/);
  });
});
