// The result store on its real parts: a SQLite file, the vault, a manual clock. Kept text is
// sealed (never on disk in clear), bound to its owner and thread, capped per team (oldest evicted
// first), expired by the clock, deleted by the reaper, and every read is audited.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { memoryLogger } from "../../src/log/logger.js";
import { type KeepRequest, ResultStore } from "../../src/results/result-store.js";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";
import { TempDirs } from "../support/foundation.js";

const tmp = new TempDirs();
const THREAD = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };
const OWNER = { thread: THREAD, userId: "UALICE01", member: true };
const LIMITS = { maxBytes: 1_000, maxLines: 20 };

let dir: string;
let store: SqliteStore;
let clock: ManualClock;
let results: ResultStore;
let vault: Vault;

function make(maxBytesPerTeam = 1_000_000, ttlMs = 60_000, ring = new KeyRing(randomBytes(32))): ResultStore {
  vault = new Vault(ring);
  return new ResultStore(
    { results: store.results, audit: store.audit, vault, clock, log: memoryLogger("debug") },
    { ttlMs, maxBytesPerTeam, pageLimits: LIMITS },
  );
}

const request = (text: string, o: Partial<KeepRequest> = {}): KeepRequest => ({
  callId: `call_${randomBytes(4).toString("hex")}`,
  thread: THREAD,
  ownerUserId: OWNER.userId,
  service: "vendor",
  tool: "listing",
  text,
  ...o,
});

async function kept(r: ResultStore, req: KeepRequest): Promise<{ id: string; uri: string; pages: number }> {
  const out = await r.keep(req);
  if (out.kind !== "kept") throw new Error(`not kept: ${out.reason}`);
  return out;
}

beforeEach(() => {
  dir = tmp.make();
  store = openSqliteStore(path.join(dir, "slaude.db")).store;
  clock = new ManualClock(Date.now());
  results = make();
});
afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

describe("ResultStore", () => {
  it("keeps the text sealed: the database file never holds it in clear, and its owner reads it back page by page", async () => {
    const marker = `MARKER-${randomBytes(8).toString("hex")}`;
    const text = Array.from({ length: 100 }, (_, i) => `${marker} line ${i}`).join("\n");
    const k = await kept(results, request(text));
    expect(k.pages).toBe(5);
    store.db.pragma("wal_checkpoint(TRUNCATE)");
    const onDisk = readFileSync(path.join(dir, "slaude.db"));
    expect(onDisk.includes(Buffer.from(marker))).toBe(false);

    let joined = "";
    for (let page = 1; page <= k.pages; page++) {
      const r = await results.read(page === 1 ? k.uri : `${k.uri}?page=${page}`, OWNER);
      if (r.kind !== "page") throw new Error(r.kind);
      expect(r.page).toBe(page);
      expect(r.pages).toBe(5);
      expect(r.next).toBe(page < 5 ? `${k.uri}?page=${page + 1}` : undefined);
      joined += r.text;
    }
    expect(joined).toBe(text);
    expect(await results.read(`${k.uri}?page=6`, OWNER)).toEqual({ kind: "no_such_page", pages: 5 });
  });

  it("answers every refusal with the same not_found, and audits each read with its reason", async () => {
    const k = await kept(results, request("x\n".repeat(50)));
    const refused = [
      [{ ...OWNER, userId: "UBOB0002" }, "other_user"],
      [{ ...OWNER, thread: { ...THREAD, threadTs: "1700000000.000200" } }, "other_thread"],
      [{ ...OWNER, thread: { ...THREAD, teamId: "T2" } }, "other_team"],
      [{ ...OWNER, userId: undefined }, "no_turn"],
      [{ ...OWNER, member: false }, "not_member"],
    ] as const;
    for (const [reader] of refused) expect(await results.read(k.uri, reader)).toEqual({ kind: "not_found" });
    expect(await results.read("slaude://results/res_AAAAAAAAAAAAAAAA", OWNER)).toEqual({ kind: "not_found" });
    expect(await results.read("slaude://results/nope", OWNER)).toEqual({ kind: "not_found" });
    expect((await results.read(k.uri, OWNER)).kind).toBe("page");

    const reads = await store.audit.query({ event: "result_read" });
    expect(reads.map((r) => r.errorCode ?? r.decision)).toEqual([
      ...refused.map(([, why]) => why),
      "unknown",
      "malformed",
      "page 1/3",
    ]);
    // Another team's reader learns nothing of the row, not even in its own team's audit rows.
    const otherTeam = reads.find((r) => r.errorCode === "other_team");
    expect(otherTeam).toMatchObject({ teamId: "T2", ownerUserId: null, callId: null, service: null });
    expect(reads.at(-1)).toMatchObject({
      callerUserId: OWNER.userId,
      ownerUserId: OWNER.userId,
      resultBytes: 40,
      decision: "page 1/3",
    });
  });

  it("expires with the clock (refused at the TTL) and the reaper deletes it", async () => {
    const k = await kept(results, request("y".repeat(3_000)));
    clock.advance(59_999);
    expect((await results.read(k.uri, OWNER)).kind).toBe("page");
    clock.advance(1);
    expect(await results.read(k.uri, OWNER)).toEqual({ kind: "not_found" });
    expect(await store.results.get(k.id)).toBeDefined();
    expect(await results.reap()).toBe(1);
    expect(await store.results.get(k.id)).toBeUndefined();
  });

  it("a row edited to another owner or thread, or sealed under a key no longer configured, does not decrypt: not_found", async () => {
    const k = await kept(results, request("z".repeat(3_000)));
    store.db.prepare("UPDATE stored_results SET owner_user_id = ? WHERE id = ?").run("UBOB0002", k.id);
    expect(await results.read(k.uri, { ...OWNER, userId: "UBOB0002" })).toEqual({ kind: "not_found" });
    store.db
      .prepare("UPDATE stored_results SET owner_user_id = ?, thread_ts = ? WHERE id = ?")
      .run(OWNER.userId, "1700000000.000999", k.id);
    expect(await results.read(k.uri, { ...OWNER, thread: { ...THREAD, threadTs: "1700000000.000999" } })).toEqual({
      kind: "not_found",
    });
    store.db.prepare("UPDATE stored_results SET thread_ts = ? WHERE id = ?").run(THREAD.threadTs, k.id);
    expect((await results.read(k.uri, OWNER)).kind).toBe("page");
    // The same row read by a store whose key ring lost the key it was sealed under.
    expect(await make().read(k.uri, OWNER)).toEqual({ kind: "not_found" });
    const why = (await store.audit.query({ event: "result_read" })).map((r) => r.errorCode);
    expect(why).toEqual(["undecryptable", "undecryptable", null, "undecryptable"]);
  });

  it("caps each team: the team's oldest results are evicted first (audited), other teams are untouched, a result over the cap is not kept", async () => {
    const capped = make(10_000);
    const other = await kept(capped, request("o".repeat(4_000), { thread: { ...THREAD, teamId: "T2" } }));
    const a = await kept(capped, request("a".repeat(4_000)));
    clock.advance(1);
    const b = await kept(capped, request("b".repeat(4_000), { ownerUserId: "UBOB0002" }));
    clock.advance(1);
    const c = await kept(capped, request("c".repeat(4_000)));
    expect(await store.results.get(a.id)).toBeUndefined();
    for (const id of [b.id, c.id, other.id]) expect(await store.results.get(id)).toBeDefined();
    expect(await store.results.teamBytes("T1", clock.now())).toBe(8_000);
    expect(await store.results.teamBytes("T2", clock.now())).toBe(4_000);
    expect(await store.audit.query({ event: "result_evicted" })).toEqual([
      expect.objectContaining({ teamId: "T1", ownerUserId: OWNER.userId, decision: "team_cap", resultBytes: 4_000 }),
    ]);
    expect(await store.audit.count({ event: "result_stored" })).toBe(4);

    expect(await capped.keep(request("d".repeat(10_001)))).toEqual({ kind: "not_kept", reason: "too_large" });
    expect(await store.results.get(b.id)).toBeDefined();
  });

  it("keeping never throws: a store that fails answers not_kept (the call is answered truncated, without a link)", async () => {
    store.db.close();
    expect(await results.keep(request("e".repeat(3_000)))).toEqual({ kind: "not_kept", reason: "unavailable" });
  });
});
