import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AuditEvent } from "../../src/audit/event.js";
import { ManualClock } from "../../src/clock/clock.js";
import { AuditTail } from "../../src/events/audit-tail.js";
import type { BrokerEvent } from "../../src/events/broker-event.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";

// The audit tail on a real SQLite file: history before start is not replayed, each committed row
// after it is emitted once, a pass reads a bounded number of rows, and the store's seq filters
// (afterSeq, seqs) answer exactly those rows.

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-tail-"));
  dirs.push(dir);
  const { store } = openSqliteStore(path.join(dir, "t.db"));
  return store;
}

const row = (id: string, at = 1): AuditEvent => ({
  at,
  event: "connection_created",
  teamId: "T1",
  ownerUserId: "U1",
  connectionId: id,
  service: "vendor",
});

describe("AuditTail on SQLite", () => {
  it("skips history, emits each later row once, and reads at most pageRows × pagesPerPass rows a pass", async () => {
    const store = open();
    await store.audit.append([row("old1"), row("old2")]);
    const seen: BrokerEvent[] = [];
    const tail = new AuditTail(store.audit, { emit: (e) => void seen.push(e) }, new ManualClock(), {
      pageRows: 2,
      pagesPerPass: 2,
      maxGaps: 10,
      gapMs: 1_000,
    });
    await tail.start();
    expect(await tail.poll()).toBe(0);
    await store.audit.append(Array.from({ length: 5 }, (_, i) => row(`new${i}`)));
    // Calls and grants in between are rows too, but no events.
    await store.audit.append([{ at: 1, event: "call", teamId: "T1" }]);
    expect(await tail.poll()).toBe(4);
    expect(await tail.poll()).toBe(1);
    expect(await tail.poll()).toBe(0);
    expect(seen.map((e) => "connectionId" in e && e.connectionId)).toEqual(["new0", "new1", "new2", "new3", "new4"]);
    expect(tail.gapCount).toBe(0);
    await store.close();
  });

  it("the store's seq filters: afterSeq and seqs", async () => {
    const store = open();
    await store.audit.append([row("a"), row("b"), row("c")]);
    const all = await store.audit.query({});
    const [a, , c] = all;
    expect((await store.audit.query({ afterSeq: a!.seq })).map((r) => r.connectionId)).toEqual(["b", "c"]);
    expect((await store.audit.query({ seqs: [a!.seq, c!.seq] })).map((r) => r.connectionId)).toEqual(["a", "c"]);
    expect(await store.audit.query({ seqs: [] })).toEqual([]);
    await store.close();
  });
});
