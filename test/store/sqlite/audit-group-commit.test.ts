import { afterEach, describe, expect, it } from "vitest";
import type { AuditEvent } from "../../../src/audit/event.js";
import { AUDIT_BATCH_MAX_ROWS } from "../../../src/store/audit-batch.js";
import { dbCounts } from "../../../src/store/sqlite/db.js";
import { type Harness, harness, rows, TempDirs } from "../../support/foundation.js";

// Group commit of audit rows (issue 13 item 3): a lone append commits in its own transaction at
// once; appends made in the same turn of the event loop (concurrent calls) share one transaction;
// each caller's promise settles only once its rows are committed. Real SQLite file.

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

const row = (callId: string): AuditEvent => ({
  at: 1,
  event: "call_started",
  callId,
  service: "svc",
  tool: "read_thing",
});
const txs = (h: Harness) => dbCounts(h.store.db).transactions;
const committed = (h: Harness, callId: string) =>
  rows(h.store, "SELECT call_id FROM audit WHERE call_id = ?", callId).length;

describe("audit group commit", () => {
  it("commits a lone append in one transaction, before its promise resolves, without waiting for a timer", async () => {
    const h = harness(tmp);
    const before = txs(h);
    await h.store.audit.append([row("call_lone")]);
    expect(committed(h, "call_lone")).toBe(1);
    expect(txs(h) - before).toBe(1);
  });

  it("shares one transaction among the appends of concurrent calls, each settled only once committed", async () => {
    const h = harness(tmp);
    const before = txs(h);
    const ids = Array.from({ length: 20 }, (_, i) => `call_${String(i).padStart(2, "0")}`);
    const seen: number[] = [];
    await Promise.all(ids.map((id) => h.store.audit.append([row(id)]).then(() => seen.push(committed(h, id)))));
    expect(txs(h) - before).toBe(1);
    // Every caller saw its own row committed when its promise resolved; rows keep the order of the appends.
    expect(seen).toEqual(ids.map(() => 1));
    expect(
      rows<{ call_id: string }>(
        h.store,
        "SELECT call_id FROM audit WHERE call_id LIKE 'call\\_%' ESCAPE '\\' ORDER BY seq",
      ).map((r) => r.call_id),
    ).toEqual(ids);
  });

  it(`takes at most ${AUDIT_BATCH_MAX_ROWS} rows per transaction; the rest go in the next`, async () => {
    const h = harness(tmp);
    const before = txs(h);
    const ids = Array.from({ length: AUDIT_BATCH_MAX_ROWS + 88 }, (_, i) => `call_m${i}`);
    await Promise.all(ids.map((id) => h.store.audit.append([row(id)])));
    expect(txs(h) - before).toBe(2);
    expect(rows(h.store, "SELECT call_id FROM audit WHERE call_id LIKE 'call_m%'").length).toBe(ids.length);
  });

  it("fails only the append whose row is refused; the others of its batch are committed", async () => {
    const h = harness(tmp);
    const broken = { at: 1, event: null } as unknown as AuditEvent;
    const results = await Promise.allSettled([
      h.store.audit.append([row("call_a")]),
      h.store.audit.append([broken]),
      h.store.audit.append([row("call_b")]),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(committed(h, "call_a") + committed(h, "call_b")).toBe(2);
  });
});
