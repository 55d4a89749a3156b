import { afterEach, expect, it } from "vitest";
import { ALICE, type Harness, makeHarness, mcpCall } from "../integration/broker-harness.js";

// A revoke done by another process (the CLI writes the store directly) reaches the pool on the
// reaper's next pass: the child, which holds the credential in its environment, is killed.

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
});

it("kills the child of a connection revoked behind the broker's back", async () => {
  h = await makeHarness();
  const { connection } = await h.connect(ALICE);
  const s = await h.session();
  await mcpCall(s.client, { tool: "echo", args: { text: "x" }, on_behalf_of: ALICE });
  const pid = h.broker.pool.pidOf(connection.id);
  expect(pid).toBeGreaterThan(0);
  // As `slaude-connect connections revoke` does from its own process: straight to the store.
  await h.store.connections.end(connection.id, {
    status: "revoked",
    reason: "cli",
    at: Date.now(),
    actor: "cli:test",
    audit: [],
  });
  expect(h.broker.pool.has(connection.id)).toBe(true);
  expect(await h.broker.reconcile()).toBe(1);
  expect(h.broker.pool.has(connection.id)).toBe(false);
  let alive = true;
  for (let i = 0; i < 100 && alive; i++) {
    try {
      process.kill(pid!, 0);
      await new Promise((r) => setTimeout(r, 20));
    } catch {
      alive = false;
    }
  }
  expect(alive).toBe(false);
  // And the call path refuses it regardless.
  expect((await mcpCall(s.client, { tool: "echo", args: { text: "x" }, on_behalf_of: ALICE })).structured.status).toBe(
    "needs_connect",
  );
});
