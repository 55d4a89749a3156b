import { afterEach, describe, expect, it } from "vitest";
import { dbCounts } from "../../src/store/sqlite/db.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { ALICE, type Harness, makeHarness, mcpCall } from "../integration/broker-harness.js";

// SQLite off the warm path (issue 13 item 3), through the real call path: real store file, real
// vendor child, real MCP client. A warm call on the caller's own connection reads no connection
// row (the memo answers), writes its two audit rows, and concurrent calls share transactions;
// a revoke, here or by another connection to the file, still wins on the next call.

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const counts = (x: Harness) => ({ ...dbCounts(x.store.db) });

describe("warm mcp_call and the store", () => {
  it("a warm own call runs at most 5 statements (three data_version reads and its two audit rows), none of them a row read", async () => {
    h = await makeHarness();
    await h.connect(ALICE);
    const s = await h.session();
    expect(
      (await mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE })).structured.ranAs,
    ).toBe("own");
    const before = counts(h);
    const n = 20;
    for (let i = 0; i < n; i++)
      expect(
        (await mcpCall(s.client, { tool: "read_item", args: { id: String(i) }, on_behalf_of: ALICE })).structured.ranAs,
      ).toBe("own");
    const after = counts(h);
    // data_version for the connection memo, one each for the tool-pin gate and the check on the
    // vendor (they run in later turns of the event loop), and the two audit rows.
    expect((after.statements - before.statements) / n).toBeLessThanOrEqual(5);
    expect((after.transactions - before.transactions) / n).toBeLessThanOrEqual(2);
    expect(await h.store.audit.count({ event: "call" })).toBe(n + 1);
  });

  it("concurrent calls share audit transactions, and every call still has both rows", async () => {
    h = await makeHarness();
    await h.connect(ALICE);
    const s = await h.session();
    await mcpCall(s.client, { tool: "read_item", args: { id: "0" }, on_behalf_of: ALICE });
    const before = counts(h);
    const n = 24;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        mcpCall(s.client, { tool: "read_item", args: { id: String(i) }, on_behalf_of: ALICE }),
      ),
    );
    expect(results.every((r) => r.structured.ranAs === "own")).toBe(true);
    expect(counts(h).transactions - before.transactions).toBeLessThan(2 * n);
    expect(await h.store.audit.count({ event: "call_started" })).toBe(n + 1);
    expect(await h.store.audit.count({ event: "call" })).toBe(n + 1);
  });

  it("a revoke by another connection to the file (the CLI) wins on the next call", async () => {
    h = await makeHarness();
    const { connection } = await h.connect(ALICE);
    const s = await h.session();
    expect(
      (await mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE })).structured.ranAs,
    ).toBe("own");
    const cli = openSqliteStore(h.store.db.name, Date.now).store;
    try {
      await cli.connections.end(connection.id, {
        status: "revoked",
        reason: "admin",
        at: Date.now(),
        audit: [],
        actor: "cli:admin",
      });
    } finally {
      await cli.close();
    }
    const r = await mcpCall(s.client, { tool: "read_item", args: { id: "2" }, on_behalf_of: ALICE });
    expect(r.structured.ranAs).toBeUndefined();
    expect(r.structured.status).not.toBe("ok");
  });
});
