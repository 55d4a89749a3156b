import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { ALICE, aliceThreadConnection, mcpCall } from "../integration/broker-harness.js";
import { keepDir, logOf, openOn, pgCluster, replica, reportTurn, useMcpReplicas } from "../support/mcp-replicas.js";

// A call whose vendor answers while PostgreSQL is away, and stays away past the call's wait for its
// completion row (issue 21, item 9): the call is refused with store_unavailable saying it ran (its
// result withheld, a retry hint given), never answered ok without its row; the row is written once
// the server is back. A real app on a real PostgreSQL, restarted on its data directory and port;
// the app's clock is a ManualClock, so "past the wait" is a step of time, not a sleep.

useMcpReplicas();
vi.setConfig({ testTimeout: 120_000 });

describe("a completion row the database cannot take in time", () => {
  it("refuses the call as store_unavailable (it ran, result withheld, retry hint) and writes the row once the database is back", async () => {
    const url = await pgCluster().createDatabase();
    const clock = new ManualClock(Date.now());
    const app = await replica(url, {}, clock);
    await aliceThreadConnection(app.lifecycle);
    await reportTurn(app);
    const { client } = await openOn(app);
    expect(
      (await mcpCall(client, { tool: "echo", args: { text: "warm" }, on_behalf_of: ALICE })).structured.status,
    ).toBe("ok");

    const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-outage-"));
    keepDir(dir);
    const gate = path.join(dir, "gate");
    const held = mcpCall(
      client,
      { tool: "wait_for_file", args: { path: gate }, on_behalf_of: ALICE },
      { timeout: 90_000 },
    );
    await vi.waitFor(async () => expect(await app.store.audit.count({ event: "call_started" })).toBe(2), {
      timeout: 20_000,
      interval: 20,
    });
    const [started] = await app.store.audit.query({ event: "call_started", take: "latest", limit: 1 });
    const callId = started!.callId!;

    let answer: Awaited<typeof held> | undefined;
    await pgCluster().restart(async () => {
      writeFileSync(gate, "");
      await vi.waitFor(
        () =>
          expect(
            logOf(app).some((l) => l.includes("audit row queued: the database is unavailable") && l.includes(callId)),
          ).toBe(true),
        { timeout: 20_000, interval: 20 },
      );
      // The database stays away past the call's 20 s wait for its row.
      await clock.advanceAsync(20_000);
      answer = await held;
    });

    expect(answer!.isError).toBe(true);
    expect(answer!.structured).toMatchObject({ status: "refused", code: "store_unavailable", retryAfterSeconds: 5 });
    expect(answer!.text).toContain("The call ran on");
    expect(answer!.text).toContain("result is withheld");
    expect(answer!.text).not.toContain("released");

    // Back: the queued row is written by the backlog's retry (on the app's clock), once.
    await vi.waitFor(
      async () => {
        await clock.advanceAsync(2_000);
        expect((await app.store.audit.query({ callId })).map((r) => r.event)).toEqual(["call_started", "call"]);
      },
      { timeout: 30_000, interval: 50 },
    );
    expect(
      logOf(app).some((l) => l.includes("audit row written after the database came back") && l.includes(callId)),
    ).toBe(true);
    expect(app.broker.calls.completions.size).toBe(0);
    expect(
      (await mcpCall(client, { tool: "echo", args: { text: "after" }, on_behalf_of: ALICE })).structured.status,
    ).toBe("ok");
  });
});
