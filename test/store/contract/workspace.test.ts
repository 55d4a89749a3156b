// The local workspace's store: every list is capped (oldest or settled pruned first) and a card read
// back is parsed strictly (a tampered row is never shown). On SQLite and PostgreSQL.
import { describe, expect, it } from "vitest";
import type { Card } from "../../../src/domain/card.js";
import type { InboxRecord } from "../../../src/store/records.js";
import type { Store } from "../../../src/store/store.js";
import { DEMO_TEAM, LOCAL_TEAM_ID } from "../../../src/workspace/local/model.js";
import { backends, type StoreHarness } from "./backends.js";

const BACKENDS = backends();
const T = LOCAL_TEAM_ID;

/** A fresh store with the demo team seeded. */
async function seeded(h: StoreHarness): Promise<Store> {
  expect(await h.store.workspace.seed({ teamId: T, users: DEMO_TEAM.users, channels: DEMO_TEAM.channels }, 1)).toBe(
    true,
  );
  return h.store;
}

const card = (n: number, actions = true): Card => ({
  kind: "approval",
  title: [{ kind: "text", text: `card ${n}` }],
  lines: [],
  actions: actions ? [{ id: "denied", label: "Deny", style: "danger" }] : [],
});
const item = (n: number, state: "open" | "settled"): InboxRecord => ({
  id: `card_${n}`,
  teamId: T,
  userId: "UALICE",
  at: n,
  card: card(n, state === "open"),
  approvalId: `appr_${n}`,
  subject: null,
  state,
});

describe.each(BACKENDS)("workspace repo on $name", (be) => {
  it("seeding twice is a no-op: the second seed reports false and keeps the first's state", async () => {
    const h = await be.harness();
    const store = await seeded(h);
    await store.workspace.setMember(T, "C_GENERAL", "UBOB", false, 2);
    expect(await store.workspace.seed({ teamId: T, users: DEMO_TEAM.users, channels: DEMO_TEAM.channels }, 3)).toBe(
      false,
    );
    expect(await store.workspace.isMember(T, "C_GENERAL", "UBOB")).toBe(false);
    expect(await store.workspace.setMember(T, "C_NOPE", "UBOB", true, 4)).toBe(false);
    expect(await store.workspace.setMember(T, "C_GENERAL", "UNOBODY", true, 4)).toBe(false);
  });

  it("an inbox keeps at most its cap: settled cards are pruned before open ones, then the oldest", async () => {
    const h = await be.harness();
    const store = await seeded(h);
    await store.workspace.putInbox(item(1, "open"), 3);
    await store.workspace.putInbox(item(2, "settled"), 3);
    await store.workspace.putInbox(item(3, "open"), 3);
    await store.workspace.putInbox(item(4, "open"), 3);
    expect((await store.workspace.inbox(T, "UALICE", 100)).map((i) => i.id)).toEqual(["card_4", "card_3", "card_1"]);
    await store.workspace.putInbox(item(5, "open"), 3);
    expect((await store.workspace.inbox(T, "UALICE", 100)).map((i) => i.id)).toEqual(["card_5", "card_4", "card_3"]);
    for (let n = 6; n < 50; n++) await store.workspace.putInbox(item(n, n % 2 ? "open" : "settled"), 3);
    expect(await store.workspace.inbox(T, "UALICE", 100)).toHaveLength(3);
  });

  it("threads are capped per team and their notes go with them; notes are capped per thread", async () => {
    const h = await be.harness();
    const store = await seeded(h);
    const thread = (n: number) => ({
      teamId: T,
      channelId: "C_GENERAL",
      threadTs: `1700000000.${String(n).padStart(6, "0")}`,
    });
    for (let n = 1; n <= 5; n++) await store.workspace.addThread({ thread: thread(n), startedBy: "UALICE", at: n }, 3);
    expect((await store.workspace.threads(T, "C_GENERAL", 100)).map((t) => t.thread.threadTs)).toEqual(
      [thread(5), thread(4), thread(3)].map((t) => t.threadTs),
    );
    for (let i = 0; i < 10; i++)
      await store.workspace.addNote(thread(5), `note ${i}`, 10 + i, { maxPerThread: 4, maxThreads: 3 });
    expect((await store.workspace.notes(thread(5), 100)).map((n) => n.text)).toEqual([
      "note 6",
      "note 7",
      "note 8",
      "note 9",
    ]);
    // A note in an unknown thread records the thread, within the cap: the oldest (with its notes) goes.
    await store.workspace.addNote(thread(9), "hello", 30, { maxPerThread: 4, maxThreads: 3 });
    await store.workspace.addNote(thread(10), "hello", 31, { maxPerThread: 4, maxThreads: 3 });
    await store.workspace.addNote(thread(11), "hello", 32, { maxPerThread: 4, maxThreads: 3 });
    expect(await store.workspace.threads(T, "C_GENERAL", 100)).toHaveLength(3);
    expect(await store.workspace.notes(thread(5), 100)).toEqual([]);
    expect(await h.rows("SELECT count(*) AS n FROM workspace_notes")).toEqual([{ n: 3 }]);
    // Notes for a channel that does not exist are dropped, not stored.
    await store.workspace.addNote({ teamId: T, channelId: "C_NOPE", threadTs: "1.1" }, "x", 40, {
      maxPerThread: 4,
      maxThreads: 3,
    });
    expect(await h.rows("SELECT count(*) AS n FROM workspace_threads WHERE channel_id = 'C_NOPE'")).toEqual([{ n: 0 }]);
  });

  it("a card read back is parsed strictly: a tampered row (unknown field, bad kind, not JSON) is never shown", async () => {
    const h = await be.harness();
    const store = await seeded(h);
    await store.workspace.putInbox(item(1, "open"), 10);
    await store.workspace.putInbox(item(2, "open"), 10);
    await store.workspace.putInbox(item(3, "open"), 10);
    const tamper = (json: string, id: string) =>
      h.exec("UPDATE workspace_inbox SET card_json = ? WHERE id = ?", json, id);
    await tamper(JSON.stringify({ ...card(1), onclick: "steal()" }), "card_1");
    await tamper(JSON.stringify({ ...card(2), kind: "html" }), "card_2");
    expect((await store.workspace.inbox(T, "UALICE", 100)).map((i) => i.id)).toEqual(["card_3"]);
    await tamper("{not json", "card_3");
    expect(await store.workspace.inbox(T, "UALICE", 100)).toEqual([]);
    expect(await store.workspace.getInbox("card_3")).toBeUndefined();
  });
});
