import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ALICE, fixtureRegistryDoc, type Harness, makeHarness, mcpCall } from "./broker-harness.js";

// A revoke that lands between a call's decision and its run (src/broker/call-start.ts): the chosen
// row is read again while the write-ahead row commits, and the revoked row stops the call before
// anything reaches the vendor; its started row gets a completion row naming why. Real SQLite file,
// the real fixture vendor as a child process, the revoke committed through the real lifecycle at
// the very moment the run reads the row again.

const harnesses: Harness[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("a revoke between the decision and the run", () => {
  it("stops the call before the vendor: call_started, then a call row with connection_unusable", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-revoke-race-"));
    dirs.push(dir);
    const writeLog = path.join(dir, "writes.jsonl");
    const h = await makeHarness({ registryDoc: fixtureRegistryDoc({ VENDOR_WRITE_LOG: writeLog }) });
    harnesses.push(h);
    const { connection } = await h.connect(ALICE);
    const s = await h.session();
    expect(
      (await mcpCall(s.client, { tool: "echo", args: { text: "warm" }, on_behalf_of: ALICE })).structured.status,
    ).toBe("ok");

    // The run's re-read of the row (the read startRun makes, not the decision's): the owner revokes it just before.
    const connections = h.store.connections;
    const get = connections.get.bind(connections);
    let revoked = 0;
    connections.get = async (id) => {
      if (id === connection.id && revoked === 0 && new Error().stack?.includes("startRun")) {
        revoked++;
        await h.lifecycle.revoke(id, ALICE);
      }
      return get(id);
    };
    const r = await mcpCall(s.client, { tool: "write_item", args: { id: "w1", value: "v" }, on_behalf_of: ALICE });
    expect(revoked).toBe(1);
    expect(r.isError).toBe(true);
    expect(r.structured.code).toBe("connection_unusable");
    expect(existsSync(writeLog) ? readFileSync(writeLog, "utf8") : "").toBe("");

    const [started] = await h.store.audit.query({ event: "call_started", take: "latest", limit: 1 });
    expect(started).toMatchObject({ tool: "write_item", ownerUserId: ALICE, connectionId: connection.id });
    const rows = await h.store.audit.query({ callId: started!.callId! });
    expect(rows.map((row) => [row.event, row.errorCode ?? null])).toEqual([
      ["call_started", null],
      ["call", "connection_unusable"],
    ]);
  });
});
