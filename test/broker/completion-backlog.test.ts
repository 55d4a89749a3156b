import { describe, expect, it } from "vitest";
import type { AuditEvent } from "../../src/audit/event.js";
import { CompletionBacklog, type CompletionWrite } from "../../src/broker/completion-backlog.js";
import { ManualClock } from "../../src/clock/clock.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StoreError } from "../../src/store/errors.js";
import { FakeAudit } from "../support/fake-audit.js";

// The completion backlog (issue 21, item 9): while the database is away a completion row waits in
// memory and is written once it is back, never twice; the backlog is bounded, and what happens past
// its cap fails closed. Time is a ManualClock; the audit is an in-memory fake whose outage is a switch.

const row = (n: number): AuditEvent => ({
  at: 1,
  event: "call",
  callId: `call_${n}`,
  service: "vendor",
  tool: "echo",
  argsHash: "secret-free",
});

function setup(limits = { maxRows: 3, waitMs: 10_000, retryMs: 100, maxRetryMs: 400 }) {
  const repo = new FakeAudit();
  const clock = new ManualClock();
  const log = memoryLogger("debug");
  const backlog = new CompletionBacklog({ repo, log, clock }, limits);
  return { repo, clock, log, backlog };
}

/** Collects the settlement of `p` without awaiting it. */
function track(p: Promise<CompletionWrite>): { value: CompletionWrite | undefined } {
  const t: { value: CompletionWrite | undefined } = { value: undefined };
  void p.then((v) => (t.value = v));
  return t;
}

describe("CompletionBacklog", () => {
  it("writes at once when the database answers", async () => {
    const { repo, backlog } = setup();
    expect(await backlog.write(row(1))).toBe("written");
    expect(repo.rows.map((r) => r.callId)).toEqual(["call_1"]);
    expect(backlog.size).toBe(0);
  });

  it("queues a row while the database is away and writes it once it is back: the caller learns `written` within the wait", async () => {
    const { repo, clock, log, backlog } = setup();
    repo.down = true;
    const w = track(backlog.write(row(1)));
    await clock.advanceAsync(0);
    expect(backlog.size).toBe(1);
    // Retries while down back off (100, 200, 400, 400 …) and keep the row.
    await clock.advanceAsync(1_500);
    expect(w.value).toBeUndefined();
    expect(repo.rows).toEqual([]);
    repo.down = false;
    await clock.advanceAsync(400);
    expect(w.value).toBe("written");
    expect(repo.rows.map((r) => r.callId)).toEqual(["call_1"]);
    expect(backlog.size).toBe(0);
    expect(
      log.lines.some((l) => l.includes("audit row queued: the database is unavailable") && l.includes("call_1")),
    ).toBe(true);
    expect(
      log.lines.some((l) => l.includes("audit row written after the database came back") && l.includes("call_1")),
    ).toBe(true);
    // Ids only: never the arguments' hash or anything else of the row.
    expect(log.lines.join("\n")).not.toContain("secret-free");
  });

  it("past the wait the caller learns `pending`; the row stays queued and is written (once) when the database returns", async () => {
    const { repo, clock, backlog } = setup();
    repo.down = true;
    const w = track(backlog.write(row(1)));
    await clock.advanceAsync(10_000);
    expect(w.value).toBe("pending");
    expect(backlog.size).toBe(1);
    repo.down = false;
    await clock.advanceAsync(400);
    expect(backlog.size).toBe(0);
    expect(repo.rows.map((r) => r.callId)).toEqual(["call_1"]);
  });

  it("a first write that committed but lost its acknowledgement is not written a second time", async () => {
    const { repo, clock, backlog } = setup();
    repo.lostAck = true;
    const w = track(backlog.write(row(7)));
    await clock.advanceAsync(100);
    expect(w.value).toBe("written");
    expect(repo.rows.map((r) => r.callId)).toEqual(["call_7"]);
  });

  it("is bounded: past maxRows a row is dropped (logged) and `full` holds until the database drains it", async () => {
    const { repo, clock, log, backlog } = setup();
    repo.down = true;
    const queued = [1, 2, 3].map((n) => track(backlog.write(row(n))));
    await clock.advanceAsync(0);
    expect(backlog.size).toBe(3);
    expect(backlog.full).toBe(true);
    expect(await backlog.write(row(4))).toBe("dropped");
    expect(backlog.size).toBe(3);
    expect(
      log.lines.some(
        (l) =>
          l.includes("audit row dropped: the database is unavailable and the completion backlog is full") &&
          l.includes("call_4"),
      ),
    ).toBe(true);
    repo.down = false;
    await clock.advanceAsync(400);
    expect(queued.map((q) => q.value)).toEqual(["written", "written", "written"]);
    // Oldest first; the dropped row was never kept.
    expect(repo.rows.map((r) => r.callId)).toEqual(["call_1", "call_2", "call_3"]);
    expect(backlog.full).toBe(false);
  });

  it("a failure that is not an outage (a held SQLite lock) is logged once and not retried", async () => {
    const { repo, clock, log, backlog } = setup();
    repo.failWith = new StoreError("busy", "database is locked (another process held the write lock past 300 ms)");
    expect(await backlog.write(row(1))).toBe("failed");
    expect(backlog.size).toBe(0);
    expect(clock.pendingTimers()).toBe(0);
    const line = log.lines.find((l) => l.includes("audit row not written"));
    expect(line).toContain('"code":"busy"');
    expect(line).toContain("call_1");
  });

  it("close() logs the rows still waiting by call id and settles their callers", async () => {
    const { repo, clock, log, backlog } = setup();
    repo.down = true;
    const w = track(backlog.write(row(9)));
    await clock.advanceAsync(0);
    backlog.close();
    await clock.advanceAsync(0);
    expect(w.value).toBe("failed");
    expect(log.lines.some((l) => l.includes("audit rows not written at shutdown") && l.includes("call_9"))).toBe(true);
    expect(clock.pendingTimers()).toBe(0);
  });

  it("a caller's abort stops its wait (`pending`), not the retry", async () => {
    const { repo, clock, backlog } = setup();
    repo.down = true;
    const abort = new AbortController();
    const w = track(backlog.write(row(1), abort.signal));
    await clock.advanceAsync(0);
    abort.abort();
    await clock.advanceAsync(0);
    expect(w.value).toBe("pending");
    repo.down = false;
    await clock.advanceAsync(400);
    expect(repo.rows.map((r) => r.callId)).toEqual(["call_1"]);
  });
});
