import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import type { AuditEvent } from "../../src/audit/event.js";
import { ManualClock } from "../../src/clock/clock.js";
import { AuditTail } from "../../src/events/audit-tail.js";
import type { BrokerEvent } from "../../src/events/broker-event.js";
import { EVENTS_CHANNEL } from "../../src/events/relay.js";
import { writeAudit } from "../../src/store/postgres/audit-repo.js";
import { ALICE, mcpCall } from "../integration/broker-harness.js";
import { postgresStores } from "../support/postgres-stores.js";
import { boot, client, connect, Opened, subscribe, TOKEN_T2, turn } from "./events-app.js";

// Lifecycle events on PostgreSQL replicas (issue 21 item 8): an event derived from an audit row is
// read back from the shared audit table by every replica, so a host streaming from replica B sees
// what replica A (or the CLI) committed; and a row whose transaction commits after a later row was
// read (sequence numbers are taken before commit) still yields its event, once.

const pgs = postgresStores();
const opened = new Opened();
afterEach(() => opened.closeAll());

describe("lifecycle events across replicas on one PostgreSQL", () => {
  it("a connection created and revoked on replica A reaches a stream on replica B, once each, for its own team only", async () => {
    const url = await pgs.schema();
    const env = { SLAUDE_DATABASE_URL: url, SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64") };
    const a = await boot(opened, env, { eventTailIntervalMs: 100 });
    const b = await boot(opened, env, { eventTailIntervalMs: 100 });
    const onB = await subscribe(opened, b.app);
    const onA = await subscribe(opened, a.app);
    const t2OnB = await subscribe(opened, b.app, TOKEN_T2);
    const canary = `canary-${randomBytes(12).toString("hex")}`;
    const conn = await connect(a.app, ALICE, canary);
    const created = await onB.waitFor((e) => e.event === "connection.created");
    expect(created.data).toMatchObject({
      teamId: "T1",
      connectionId: conn.id,
      ownerUserId: ALICE,
      audit: "connection_created",
    });

    // Another session on the server LISTENs on the relay's channel: it must see only ciphertext.
    const spy = new pg.Client({ connectionString: url });
    await spy.connect();
    opened.closers.push(() => spy.end().catch(() => {}));
    const heard: string[] = [];
    spy.on("notification", (n) => void (n.channel === EVENTS_CHANNEL && heard.push(n.payload ?? "")));
    await spy.query(`LISTEN ${EVENTS_CHANNEL}`);

    // The call and its vendor run on A; a host streaming from B sees them too, relayed.
    const c = await client(opened, a.app);
    await turn(a.app, ALICE);
    await mcpCall(c, { tool: "echo", args: { text: "x" }, on_behalf_of: ALICE });
    await onA.waitFor((e) => e.event === "child.started");
    const ended = await onB.waitFor((e) => e.event === "call.ended" && e.data.tool === "echo");
    expect(ended.data).toMatchObject({ teamId: "T1", outcome: "ok", callerUserId: ALICE });
    expect(onB.ofCall(ended.data.callId).map((e) => e.event)).toEqual(["call.started", "call.ended"]);
    expect((await onB.waitFor((e) => e.event === "child.started")).data).toMatchObject({
      connectionId: conn.id,
      transport: "stdio",
    });
    // B's own metrics and log line are for B's calls: the relayed call is A's to count.
    expect(b.log.lines.some((l) => l.includes("mcp_call done"))).toBe(false);
    expect(a.log.lines.some((l) => l.includes("mcp_call done"))).toBe(true);
    expect(heard.length).toBeGreaterThan(0);
    // Short names are looked for as JSON strings: a bare "T1" turns up in random base64 about one payload in eight.
    for (const h of heard)
      for (const leak of [conn.id, ended.data.callId, ALICE, '"echo"', '"T1"', canary]) expect(h).not.toContain(leak);
    for (const h of heard) expect(() => JSON.parse(Buffer.from(h, "base64").toString("utf8"))).toThrow();

    // A forged batch and a replay of a real one are dropped by B: the next real call shows it.
    await spy.query("SELECT pg_notify($1, $2)", [
      EVENTS_CHANNEL,
      JSON.stringify({
        o: "forger",
        n: 1,
        at: Date.now(),
        e: [{ type: "call.ended", teamId: "T1", callId: "call_forged", tool: "forged" }],
      }),
    ]);
    await spy.query("SELECT pg_notify($1, $2)", [EVENTS_CHANNEL, heard[0]!]);
    await mcpCall(c, { tool: "echo", args: { text: "y" }, on_behalf_of: ALICE });
    await onB.waitFor((e) => e.event === "call.ended" && e.data.callId !== ended.data.callId);
    expect(onB.raw).not.toContain("call_forged");
    expect(onB.ofCall(ended.data.callId).map((e) => e.event)).toEqual(["call.started", "call.ended"]);
    expect(b.log.lines.some((l) => l.includes("events relay: dropped a notification that is not ours"))).toBe(true);

    // The revoke is made on B: A's stream has the revoke and A's child stopping for it.
    await b.app.lifecycle.revoke(conn.id, ALICE);
    expect((await onA.waitFor((e) => e.event === "connection.revoked")).data.connectionId).toBe(conn.id);
    expect((await onA.waitFor((e) => e.event === "child.stopped")).data).toMatchObject({
      connectionId: conn.id,
      reason: "revoked",
    });
    await onB.waitFor((e) => e.event === "connection.revoked");

    // Once each per stream, though both replicas read the same rows.
    for (const s of [onA, onB]) {
      expect(s.events.filter((e) => e.event === "connection.created" && e.data.connectionId === conn.id)).toHaveLength(
        1,
      );
      expect(s.events.filter((e) => e.event === "connection.revoked" && e.data.connectionId === conn.id)).toHaveLength(
        1,
      );
    }
    // T2's stream on B: a T2 row committed after T1's reaches it, and nothing of T1's did.
    await b.app.lifecycle.create({
      teamId: "T2",
      ownerUserId: "UT2OWNER",
      service: "vendor",
      scope: "user",
      credential: { kind: "fields", fields: { token: canary, user: "x" } },
      createdBy: "UT2OWNER",
    });
    await t2OnB.waitFor((e) => e.event === "connection.created");
    expect(t2OnB.events.every((e) => e.data.teamId === "T2")).toBe(true);
    for (const s of [onA, onB, t2OnB]) expect(s.raw).not.toContain(canary);
  }, 120_000);

  it("a row committed after a later one was read is still emitted (once), and a gap is given up after its window", async () => {
    const store = await pgs.store(await pgs.schema());
    const clock = new ManualClock(Date.now());
    const seen: BrokerEvent[] = [];
    const tail = new AuditTail(store.audit, { emit: (e) => void seen.push(e) }, clock);
    await tail.start();
    const row = (id: string): AuditEvent => ({
      at: clock.now(),
      event: "connection_created",
      teamId: "T1",
      ownerUserId: ALICE,
      connectionId: id,
      service: "vendor",
    });

    // Transaction 1 takes its sequence number first and holds its commit; transaction 2 commits.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let inserted!: () => void;
    const firstInserted = new Promise<void>((r) => (inserted = r));
    const slow = store.db.tx(async (q) => {
      await writeAudit(q, [row("conn_slow")]);
      inserted();
      await held;
    });
    await firstInserted;
    await store.audit.append([row("conn_fast")]);
    expect(await tail.poll()).toBe(1);
    expect(seen.map((e) => "connectionId" in e && e.connectionId)).toEqual(["conn_fast"]);
    expect(tail.gapCount).toBe(1);

    release();
    await slow;
    expect(await tail.poll()).toBe(1);
    expect(seen.map((e) => "connectionId" in e && e.connectionId)).toEqual(["conn_fast", "conn_slow"]);
    expect(tail.gapCount).toBe(0);
    expect(await tail.poll()).toBe(0);

    // A transaction that rolls back leaves a gap for good: re-checked within the window, then given up.
    await store.db
      .tx(async (q) => {
        await writeAudit(q, [row("conn_rolled_back")]);
        throw new Error("roll back");
      })
      .catch(() => {});
    await store.audit.append([row("conn_after")]);
    expect(await tail.poll()).toBe(1);
    expect(tail.gapCount).toBe(1);
    clock.advance(30_000);
    expect(await tail.poll()).toBe(0);
    expect(tail.gapCount).toBe(0);
    expect(seen.map((e) => "connectionId" in e && e.connectionId)).toEqual(["conn_fast", "conn_slow", "conn_after"]);
  }, 60_000);
});
