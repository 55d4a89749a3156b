import { execFileSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type HeldLock, holdWriteLock } from "../support/db-lock.js";
import { ALICE, fixtureRegistryDoc, type Harness, makeHarness, mcpCall } from "./broker-harness.js";

// Issue 9, item 9: the audit is written ahead of effects. A `call_started` row is committed before
// anything reaches the vendor; if it cannot be written (another process holds the write lock, the
// disk is full) the call is refused with audit_unavailable and the vendor never runs. Once the
// vendor has run, its result is returned even if the completion row cannot be written, and the
// log records that failure. Real SQLite files, a real second process holding the lock, a real
// tmpfs filled to the last byte, the real fixture vendor as a child process.

const harnesses: Harness[] = [];
const locks: HeldLock[] = [];
const cleanups: (() => void)[] = [];
afterEach(async () => {
  for (const l of locks.splice(0)) await l.release();
  for (const h of harnesses.splice(0)) await h.close();
  for (const c of cleanups.splice(0).reverse()) c();
});

function tempDir(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), "slaude-wal-audit-"));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

async function harness(writeLog: string, extra: { dbFile?: string } = {}): Promise<Harness> {
  const h = await makeHarness({
    registryDoc: fixtureRegistryDoc({ VENDOR_WRITE_LOG: writeLog }),
    lockWaitMs: 300,
    ...extra,
  });
  harnesses.push(h);
  return h;
}

function writes(file: string): string[] {
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
}

/** The call's audit rows, paired by call id: exactly one call_started and one call row. */
async function pairedRows(h: Harness): Promise<{ callId: string; events: string[] }> {
  const started = await h.store.audit.query({ event: "call_started" });
  expect(started).toHaveLength(1);
  const callId = started[0]!.callId!;
  expect(callId).toMatch(/^call_/);
  const rows = await h.store.audit.query({ callId });
  return { callId, events: rows.map((r) => r.event) };
}

describe("write-ahead audit of mcp_call", () => {
  it("refuses a call whose call_started row cannot be written because another process holds the write lock; the vendor never runs", async () => {
    const dir = tempDir();
    const writeLog = path.join(dir, "writes.jsonl");
    const h = await harness(writeLog);
    await h.connect(ALICE);
    const s = await h.session();

    const lock = await holdWriteLock(path.join(h.dir, "slaude.db"));
    locks.push(lock);
    const refused = await mcpCall(s.client, {
      tool: "write_item",
      args: { id: "a1", value: "v1" },
      on_behalf_of: ALICE,
    });
    await lock.release();

    expect(refused.isError).toBe(true);
    expect(refused.structured.code).toBe("audit_unavailable");
    expect(refused.text).toContain("nothing ran");
    expect(writes(writeLog)).toEqual([]);
    expect(
      h.log.lines.some((l) => l.includes("call_started audit row could not be written") && l.includes('"code":"busy"')),
    ).toBe(true);
    expect(await h.store.audit.count({ event: "call_started" })).toBe(0);
    expect(await h.store.audit.count({ event: "call" })).toBe(0);

    // With the lock released, the same call runs exactly once and both of its rows are there.
    const ok = await mcpCall(s.client, { tool: "write_item", args: { id: "a1", value: "v1" }, on_behalf_of: ALICE });
    expect(ok.structured.status).toBe("ok");
    expect(writes(writeLog)).toHaveLength(1);
    expect((await pairedRows(h)).events).toEqual(["call_started", "call"]);
  });

  it("returns the result when the completion row cannot be written (lock taken after call_started), and logs the failure", async () => {
    const dir = tempDir();
    const gate = path.join(dir, "gate");
    const h = await harness(path.join(dir, "writes.jsonl"));
    await h.connect(ALICE);
    const s = await h.session();
    // A warm vendor: its start already recorded its tool pins, so the only write after
    // call_started is the completion row (a cold start's pin write would be refused first).
    const warm = await mcpCall(s.client, { tool: "echo", args: { text: "hi" }, on_behalf_of: ALICE });
    expect(warm.structured.status).toBe("ok");

    const inFlight = mcpCall(s.client, { tool: "wait_for_file", args: { path: gate }, on_behalf_of: ALICE });
    // The event that proves the vendor is about to run: its call_started row is committed.
    await expect.poll(() => h.store.audit.count({ event: "call_started" }), { timeout: 20_000, interval: 20 }).toBe(2);
    const lock = await holdWriteLock(path.join(h.dir, "slaude.db"));
    locks.push(lock);
    writeFileSync(gate, "");
    const r = await inFlight;
    await lock.release();

    expect(r.isError).toBe(false);
    expect(r.structured.status).toBe("ok");
    expect(r.text).toContain("released");
    const [started] = await h.store.audit.query({ event: "call_started", take: "latest", limit: 1 });
    const callId = started!.callId!;
    // No completion row, but the started row says the call ran; the log names the call.
    expect((await h.store.audit.query({ callId })).map((x) => x.event)).toEqual(["call_started"]);
    const logged = h.log.lines.find((l) => l.includes("audit row not written") && l.includes(callId));
    expect(logged).toBeDefined();
    expect(logged).toContain('"code":"busy"');
    expect(logged).toContain('"outcome":"ok"');
  });

  it("refuses calls while the database's disk is full (a 2 MB tmpfs filled to the last byte) and runs them again once there is space", async () => {
    const dir = tempDir();
    const writeLog = path.join(dir, "writes.jsonl");
    const mnt = path.join(dir, "data");
    execFileSync("mkdir", ["-p", mnt]);
    // Needs root (as in CI); without it this throws and the test fails: it never skips.
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", mnt]);
    cleanups.push(() => execFileSync("umount", ["-l", mnt]));
    const h = await harness(writeLog, { dbFile: path.join(mnt, "slaude.db") });
    await h.connect(ALICE);
    const s = await h.session();
    const warm = await mcpCall(s.client, { tool: "echo", args: { text: "hi" }, on_behalf_of: ALICE });
    expect(warm.structured.status).toBe("ok");

    const filler = path.join(mnt, "filler");
    const fd = openSync(filler, "w");
    const chunk = Buffer.alloc(4096, 1);
    try {
      for (;;) writeSync(fd, chunk);
    } catch (err) {
      expect((err as NodeJS.ErrnoException).code).toBe("ENOSPC");
    } finally {
      closeSync(fd);
    }
    // Top up the last partial page too.
    try {
      for (;;) writeFileSync(filler, Buffer.alloc(1), { flag: "a" });
    } catch (err) {
      expect((err as NodeJS.ErrnoException).code).toBe("ENOSPC");
    }

    const refused = await mcpCall(s.client, {
      tool: "write_item",
      args: { id: "d1", value: "v" },
      on_behalf_of: ALICE,
    });
    expect(refused.structured.code).toBe("audit_unavailable");
    expect(writes(writeLog)).toEqual([]);
    expect(
      h.log.lines.some((l) => l.includes("call_started audit row could not be written") && l.includes("SQLITE_FULL")),
    ).toBe(true);

    unlinkSync(filler);
    const ok = await mcpCall(s.client, { tool: "write_item", args: { id: "d1", value: "v" }, on_behalf_of: ALICE });
    expect(ok.structured.status).toBe("ok");
    expect(writes(writeLog)).toHaveLength(1);
    expect(await h.store.audit.count({ event: "call_started" })).toBe(2);
  });
});
