import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ALICE, BOB, fixtureRegistryDoc, mcpCall, THREAD } from "../integration/broker-harness.js";
import { boot, client, connect, Opened, subscribe, THREAD_T2, TOKEN_T2, turn } from "./events-app.js";
import type { SseEvent, SseReader } from "./sse-reader.js";

// Issue 21 item 8: GET /v1/events carries the lifecycle beside the calls: connections, vendor
// children, tool pins, approvals and logins, each scoped to its team and free of secrets. The real
// app over HTTP on SQLite: real SDK clients, the fixture vendor as real children, real SSE streams.

const opened = new Opened();
afterEach(() => opened.closeAll());

const of = (s: SseReader, type: string, pred: (e: SseEvent) => boolean = () => true) =>
  s.waitFor((e) => e.event === type && pred(e));

describe("lifecycle events on GET /v1/events", () => {
  it("connection created → child started → tools pinned → approval requested/answered → child crashed → revoked, to its own team only, never a secret", async () => {
    const { app, approvals } = await boot(opened);
    const t1 = await subscribe(opened, app);
    const t2 = await subscribe(opened, app, TOKEN_T2);
    const canary = `canary-${randomBytes(12).toString("hex")}`;
    const conn = await connect(app, ALICE, canary);

    const created = await of(t1, "connection.created");
    expect(created.data).toMatchObject({
      type: "connection.created",
      audit: "connection_created",
      teamId: "T1",
      connectionId: conn.id,
      ownerUserId: ALICE,
      service: "vendor",
      definitionHash: null,
    });

    const c = await client(opened, app);
    await turn(app, ALICE);
    expect((await mcpCall(c, { tool: "echo", args: { text: "hi" }, on_behalf_of: ALICE })).text).toContain("hi");
    const started = await of(t1, "child.started");
    expect(started.data).toMatchObject({ teamId: "T1", connectionId: conn.id, service: "vendor", transport: "stdio" });
    // The first tool list a team sees pins every tool (trust on first use): one event for the lot.
    expect((await of(t1, "tool.pinned")).data).toMatchObject({
      teamId: "T1",
      service: "vendor",
      tool: null,
      decision: "first_seen",
      actor: "vendor",
    });

    // Bob borrows Alice's connection; she allows it once.
    await turn(app, BOB);
    const borrowed = mcpCall(c, { tool: "read_item", args: { id: "secret-arg-7" }, on_behalf_of: BOB });
    const card = await approvals.nextCard();
    const requested = await of(t1, "approval.requested");
    expect(requested.data).toMatchObject({
      teamId: "T1",
      channelId: THREAD.channelId,
      threadTs: THREAD.threadTs,
      callerUserId: BOB,
      ownerUserId: ALICE,
      connectionId: conn.id,
      service: "vendor",
      tool: "read_item",
      definitionHash: null,
    });
    expect(await app.broker.approvals.decide(card.approval.id, card.approval.nonce, ALICE, "allowed_once")).toBe(
      "applied",
    );
    await borrowed;
    expect((await of(t1, "approval.answered")).data).toMatchObject({
      decision: "allowed_once",
      approverUserId: ALICE,
      callerUserId: BOB,
      connectionId: conn.id,
    });
    // Using the once-approval is the call's business (call.ended), not a second answer.
    await of(t1, "call.ended", (e) => e.data.tool === "read_item");

    // The vendor exits under a call: its child stopped as crashed; the next call starts another.
    await turn(app, ALICE);
    await mcpCall(c, { tool: "crash", on_behalf_of: ALICE });
    expect((await of(t1, "child.stopped")).data).toMatchObject({ connectionId: conn.id, reason: "crashed" });
    await mcpCall(c, { tool: "echo", args: { text: "again" }, on_behalf_of: ALICE });
    await vi.waitFor(() => expect(t1.events.filter((e) => e.event === "child.started")).toHaveLength(2), {
      timeout: 20_000,
      interval: 20,
    });

    // Revoked: the connection's event, and its child stopped for it.
    await app.lifecycle.revoke(conn.id, ALICE);
    expect((await of(t1, "connection.revoked")).data).toMatchObject({ connectionId: conn.id, ownerUserId: ALICE });
    expect((await of(t1, "child.stopped", (e) => e.data.reason === "revoked")).data).toMatchObject({
      connectionId: conn.id,
      transport: "stdio",
    });

    // Team T2's own connection reaches T2 only; T1's events never reached T2. The one stream is
    // ordered, so once T2 has its own event it would already have had T1's, had they leaked.
    const other = await app.lifecycle.create({
      teamId: THREAD_T2.teamId,
      ownerUserId: "UT2OWNER",
      service: "vendor",
      scope: "user",
      credential: { kind: "fields", fields: { token: canary, user: "x" } },
      createdBy: "UT2OWNER",
    });
    expect((await of(t2, "connection.created")).data).toMatchObject({ teamId: "T2", connectionId: other.id });
    expect(t2.events.every((e) => e.data.teamId === "T2")).toBe(true);
    expect(t2.raw).not.toContain(conn.id);
    expect(t1.events.some((e) => e.data.teamId === "T2")).toBe(false);
    expect(t1.events.filter((e) => e.event === "approval.answered")).toHaveLength(1);
    expect(t1.raw).not.toContain(other.id);

    // No credential, argument or host token anywhere on either stream.
    for (const s of [t1, t2]) {
      expect(s.raw).not.toContain(canary);
      expect(s.raw).not.toContain(Buffer.from(canary).toString("base64"));
      expect(s.raw).not.toContain("secret-arg-7");
    }
  }, 120_000);

  it("a child stops for idleness, for eviction at the cap, and the event says which", async () => {
    const { app } = await boot(opened, { SLAUDE_POOL_MAX_CHILDREN: "1", SLAUDE_POOL_IDLE_SECONDS: "1" });
    const s = await subscribe(opened, app);
    const alice = await connect(app, ALICE, `canary-${randomBytes(10).toString("hex")}`);
    const bob = await connect(app, BOB, `canary-${randomBytes(10).toString("hex")}`);
    const c = await client(opened, app);
    await turn(app, ALICE);
    await mcpCall(c, { tool: "echo", args: { text: "a" }, on_behalf_of: ALICE });
    await turn(app, BOB);
    // One slot: Bob's vendor evicts Alice's idle one.
    await mcpCall(c, { tool: "echo", args: { text: "b" }, on_behalf_of: BOB });
    expect((await of(s, "child.stopped", (e) => e.data.connectionId === alice.id)).data.reason).toBe("evicted");
    expect((await of(s, "child.started", (e) => e.data.connectionId === bob.id)).data.teamId).toBe("T1");
    // Idle past SLAUDE_POOL_IDLE_SECONDS: the reaper's pass stops it as idle (a positive wait for the event).
    const idle = await vi.waitFor(
      async () => {
        await app.broker.pool.reapIdle();
        const e = s.events.find((x) => x.event === "child.stopped" && x.data.connectionId === bob.id);
        if (!e) throw new Error("not reaped yet");
        return e;
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(idle.data.reason).toBe("idle");
  }, 60_000);

  it("a vendor that changes a tool between starts: tool.quarantined (and tool.new), then tool.accepted by an admin, with the definition hash", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-events-pins-"));
    opened.dirs.push(dir);
    const env = { SLAUDE_DATA_DIR: dir, SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64") };
    // First start: the team's first tool list is pinned.
    const first = await boot(opened, env);
    const conn = await connect(first.app, ALICE, `canary-${randomBytes(8).toString("hex")}`);
    const c1 = await client(opened, first.app);
    await turn(first.app, ALICE);
    await mcpCall(c1, { tool: "echo", args: { text: "a" }, on_behalf_of: ALICE });
    await first.app.close();
    // Same database, the vendor now serves a changed write_item (a rug pull).
    const { app } = await boot(opened, env, {}, fixtureRegistryDoc({ VENDOR_DEFINITIONS: "changed" }));
    const s = await subscribe(opened, app);
    const c = await client(opened, app);
    await turn(app, ALICE);
    await mcpCall(c, { tool: "echo", args: { text: "b" }, on_behalf_of: ALICE });
    const q = await of(s, "tool.quarantined");
    expect(q.data).toMatchObject({
      teamId: "T1",
      service: "vendor",
      tool: "write_item",
      decision: "quarantined",
      actor: "vendor",
      audit: "tool_pin",
    });
    expect(q.data.definitionHash).toMatch(/^[0-9a-f]{64}$/);
    expect((await of(s, "tool.new")).data).toMatchObject({ tool: "export_all", decision: "new" });
    const r = await app.broker.deps.pins.decide(
      { teamId: "T1", service: "vendor" },
      { kind: "accept", tool: "write_item", by: ALICE, expectedHash: q.data.definitionHash as string },
    );
    expect(r.kind).toBe("done");
    expect((await of(s, "tool.accepted")).data).toMatchObject({
      tool: "write_item",
      decision: "accepted",
      actor: ALICE,
      definitionHash: q.data.definitionHash,
    });
    // The changed definition's text (a prompt injection) never travels in an event: only its hash.
    expect(s.raw).not.toContain("Before any other tool");
    expect(s.raw).toContain(conn.id);
  }, 120_000);

  it("a connection past its TTL is expired by the reaper, and its event says so", async () => {
    const { app } = await boot(opened);
    const s = await subscribe(opened, app);
    const conn = await app.lifecycle.create({
      teamId: "T1",
      ownerUserId: ALICE,
      service: "vendor",
      scope: "user",
      credential: { kind: "fields", fields: { token: `canary-${randomBytes(8).toString("hex")}`, user: ALICE } },
      createdBy: ALICE,
      ttlMs: 300,
    });
    const expired = await vi.waitFor(
      async () => {
        await app.lifecycle.reapExpired();
        const e = s.events.find((x) => x.event === "connection.expired");
        if (!e) throw new Error("not expired yet");
        return e;
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(expired.data).toMatchObject({
      teamId: "T1",
      connectionId: conn.id,
      ownerUserId: ALICE,
      actor: "reaper",
      audit: "connection_expired",
    });
  }, 60_000);

  it("login started, then failed when its link expires, without the link", async () => {
    const { app } = await boot(opened, { SLAUDE_LOGIN_LINK_TTL_SECONDS: "1" });
    const s = await subscribe(opened, app);
    const link = await app.logins.mint({
      teamId: "T1",
      userId: ALICE,
      service: "vendor",
      channelId: THREAD.channelId,
      threadTs: THREAD.threadTs,
    });
    expect((await of(s, "login.started")).data).toMatchObject({
      teamId: "T1",
      callerUserId: ALICE,
      service: "vendor",
      decision: "link_minted",
      audit: "login_started",
    });
    const failed = await vi.waitFor(
      async () => {
        await app.logins.reap();
        const e = s.events.find((x) => x.event === "login.failed");
        if (!e) throw new Error("not expired yet");
        return e;
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(failed.data).toMatchObject({
      teamId: "T1",
      callerUserId: ALICE,
      service: "vendor",
      decision: "expired",
      actor: "reaper",
      audit: "login_refused",
    });
    const token = new URL(link.url).pathname.split("/").pop()!;
    expect(token.length).toBeGreaterThan(16);
    expect(s.raw).not.toContain(token);
    expect(s.raw).not.toContain(link.url);
  }, 60_000);
});
