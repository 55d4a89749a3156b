import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CompletionBacklog } from "../../src/broker/completion-backlog.js";
import { systemClock } from "../../src/clock/clock.js";
import { memoryLogger } from "../../src/log/logger.js";
import { FakeAudit } from "../support/fake-audit.js";
import { ALICE, fixtureRegistryDoc, type Harness, makeHarness, mcpCall } from "./broker-harness.js";

// Past its cap the completion backlog fails closed (issue 21, item 9): while it is full, a call is
// refused with store_unavailable before anything is recorded or reaches the vendor, and it runs
// again once the backlog drains. The broker, its pool and the fixture vendor are real; the full
// backlog holds a row for an audit whose database is away.

const harnesses: Harness[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("a full completion backlog", () => {
  it("refuses calls with store_unavailable before they reach the vendor, and lets them run once it has drained", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-backlog-"));
    dirs.push(dir);
    const writeLog = path.join(dir, "writes.jsonl");
    const away = new FakeAudit();
    away.down = true;
    const backlog = new CompletionBacklog(
      { repo: away, log: memoryLogger(), clock: systemClock },
      { maxRows: 1, waitMs: 10, retryMs: 5, maxRetryMs: 20 },
    );
    const b = await makeHarness({
      registryDoc: fixtureRegistryDoc({ VENDOR_WRITE_LOG: writeLog }),
      realClock: true,
      completions: backlog,
    });
    harnesses.push(b);
    await b.connect(ALICE);
    const s = await b.session();

    expect(
      await backlog.write({ at: 1, event: "call", callId: "call_earlier", service: "vendor", tool: "write_item" }),
    ).toBe("pending");
    expect(backlog.full).toBe(true);
    const refused = await mcpCall(s.client, {
      tool: "write_item",
      args: { id: "b1", value: "v" },
      on_behalf_of: ALICE,
    });
    expect(refused.structured).toMatchObject({ status: "refused", code: "store_unavailable", retryAfterSeconds: 5 });
    expect(refused.text).toContain("nothing ran");
    expect(existsSync(writeLog) ? readFileSync(writeLog, "utf8") : "").toBe("");
    expect(await b.store.audit.count({ event: "call_started" })).toBe(0);
    expect(b.log.lines.some((l) => l.includes("call refused: the completion backlog is full"))).toBe(true);

    // The database behind the backlog is back: the row is written, the backlog drains, calls run.
    away.down = false;
    await expect.poll(() => backlog.size, { timeout: 10_000, interval: 10 }).toBe(0);
    const ok = await mcpCall(s.client, { tool: "write_item", args: { id: "b1", value: "v" }, on_behalf_of: ALICE });
    expect(ok.structured.status).toBe("ok");
    expect(readFileSync(writeLog, "utf8").split("\n").filter(Boolean)).toHaveLength(1);
  });
});
