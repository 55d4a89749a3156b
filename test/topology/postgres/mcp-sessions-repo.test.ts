import { describe, expect, it } from "vitest";
import { isLive, MemorySessionRecords, type SessionRecords } from "../../../src/server/session-records.js";
import { PostgresTopology } from "../../../src/topology/postgres/postgres-topology.js";
import { postgresStores } from "../../support/postgres-stores.js";

// The session records port against both adapters: the in-process one (SQLite deployments) and
// mcp_sessions in a real PostgreSQL, read back through a second store as another replica would.

const pg = postgresStores();

interface Adapter {
  readonly name: string;
  /** The records as the writer sees them, and as another reader (replica) sees them. */
  make(): Promise<{ writer: SessionRecords; reader: SessionRecords }>;
}

const memory: Adapter = {
  name: "memory",
  make: async () => {
    const r = new MemorySessionRecords(100);
    return { writer: r, reader: r };
  },
};

const postgres: Adapter = {
  name: "postgres",
  make: async () => {
    const url = await pg.schema();
    const [a, b] = [await pg.store(url), await pg.store(url)];
    return { writer: new PostgresTopology(a.db).mcpSessions, reader: new PostgresTopology(b.db).mcpSessions };
  },
};

const INIT = {
  protocolVersion: "2025-06-18",
  capabilities: { roots: { listChanged: true } },
  clientInfo: { name: "host", version: "1.2", title: "A host" },
};

/** Room enough: no cap in the way. */
const ROOM = { max: 1_000, idleBefore: 0 };

function opened(id: string, at: number) {
  return {
    id,
    teamId: "T1",
    tokenDigest: `k_0123456789abcdef:${"ab".repeat(32)}`,
    threadHeader: "T1/C1/1700000000.000100",
    protocolVersion: "2025-06-18",
    initialize: INIT,
    createdAt: at,
  };
}

describe.each([memory, postgres])("session records ($name)", (adapter) => {
  it("a record reads back exactly as opened, live, last seen when it opened; an unknown id is undefined", async () => {
    const { writer, reader } = await adapter.make();
    await writer.open(opened("s1", 1_000), ROOM);
    const r = await reader.get("s1");
    expect(r).toEqual({ ...opened("s1", 1_000), lastSeenAt: 1_000, endedAt: undefined });
    expect(isLive(r)).toBe(true);
    expect(await reader.get("s2")).toBeUndefined();
  });

  it("touch moves last use forward only, and never revives an ended session", async () => {
    const { writer, reader } = await adapter.make();
    await writer.open(opened("s1", 1_000), ROOM);
    await reader.touch("s1", 5_000);
    await reader.touch("s1", 3_000);
    expect((await writer.get("s1"))?.lastSeenAt).toBe(5_000);
    await writer.end("s1", 6_000);
    await writer.touch("s1", 7_000);
    expect(isLive(await reader.get("s1"))).toBe(false);
  });

  it("end is seen by every reader at once and is idempotent", async () => {
    const { writer, reader } = await adapter.make();
    await writer.open(opened("s1", 1_000), ROOM);
    await reader.end("s1", 2_000);
    await reader.end("s1", 3_000);
    await reader.end("unknown", 3_000);
    expect(isLive(await writer.get("s1"))).toBe(false);
  });

  it("notLive names the ended and unknown ids among those given", async () => {
    const { writer, reader } = await adapter.make();
    await writer.open(opened("live", 1_000), ROOM);
    await writer.open(opened("ended", 1_000), ROOM);
    await writer.end("ended", 2_000);
    expect(await reader.notLive(["live", "ended", "unknown"])).toEqual(["ended", "unknown"]);
    expect(await reader.notLive([])).toEqual([]);
  });

  it("expireIdle ends exactly the sessions last seen before the bound", async () => {
    const { writer, reader } = await adapter.make();
    await writer.open(opened("old", 1_000), ROOM);
    await writer.open(opened("fresh", 1_000), ROOM);
    await writer.touch("fresh", 9_000);
    expect(await reader.expireIdle({ idleBefore: 5_000, now: 10_000, purgeBefore: 0 })).toBe(1);
    expect(isLive(await writer.get("old"))).toBe(false);
    expect(isLive(await writer.get("fresh"))).toBe(true);
    expect(await reader.expireIdle({ idleBefore: 5_000, now: 10_000, purgeBefore: 0 })).toBe(0);
  });
});

describe("session records (postgres only)", () => {
  it("ended records keep their end time until the purge bound passes, then are gone (unknown, still refused)", async () => {
    const { writer, reader } = await postgres.make();
    await writer.open(opened("s1", 1_000), ROOM);
    await writer.end("s1", 2_000);
    expect((await reader.get("s1"))?.endedAt).toBe(2_000);
    await reader.expireIdle({ idleBefore: 0, now: 3_000, purgeBefore: 2_000 });
    expect((await reader.get("s1"))?.endedAt).toBe(2_000);
    await reader.expireIdle({ idleBefore: 0, now: 3_000, purgeBefore: 2_001 });
    expect(await reader.get("s1")).toBeUndefined();
  });

  it("a row whose initialize does not parse is refused when read, never replayed", async () => {
    const { writer, reader } = await postgres.make();
    await writer.open(opened("s1", 1_000), ROOM);
    const db = pg.opened.at(-1)!.db;
    await db.query("UPDATE mcp_sessions SET initialize = $1 WHERE id = 's1'", [JSON.stringify({ protocolVersion: 7 })]);
    await expect(reader.get("s1")).rejects.toThrow(/does not parse/);
  });

  it("at the deployment's cap a new session ends the least recently seen idle ones; with none idle it is not recorded", async () => {
    const { writer, reader } = await postgres.make();
    const room = { max: 3, idleBefore: 2_500 };
    for (const [id, at] of [
      ["s1", 1_000],
      ["s2", 2_000],
      ["s3", 3_000],
    ] as const)
      expect(await writer.open(opened(id, at), room)).toEqual({ opened: true, ended: 0 });
    await writer.touch("s1", 5_000);
    // s2 is the least recently seen of the idle ones (s1 was used since).
    expect(await reader.open(opened("s4", 6_000), room)).toEqual({ opened: true, ended: 1 });
    expect(isLive(await reader.get("s2"))).toBe(false);
    expect(isLive(await reader.get("s1"))).toBe(true);
    // s1 (5000), s3 (3000) and s4 (6000) are live and none was last seen before 2500: refused, nothing changes.
    expect(await writer.open(opened("s5", 7_000), room)).toEqual({ opened: false, ended: 0 });
    expect(await reader.get("s5")).toBeUndefined();
    for (const id of ["s1", "s3", "s4"]) expect(isLive(await reader.get(id))).toBe(true);
  });

  it("replicas opening at once at the cap never exceed it (opens are serialised)", async () => {
    const { writer, reader } = await postgres.make();
    const room = { max: 5, idleBefore: 0 };
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 ? writer : reader).open(opened(`c${i}`, 1_000 + i), room)),
    );
    expect(results.filter((r) => r.opened)).toHaveLength(5);
    const db = pg.opened.at(-1)!.db;
    expect(
      Number(
        (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM mcp_sessions WHERE ended_at IS NULL")).rows[0]!
          .n,
      ),
    ).toBe(5);
  });

  it("the store keeps no secret: the columns are the session's identity, thread, initialize and a keyed digest of its host token only", async () => {
    await postgres.make();
    const db = pg.opened.at(-1)!.db;
    const cols = (
      await db.query<{ column_name: string }>(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'mcp_sessions' AND table_schema = current_schema() ORDER BY ordinal_position",
      )
    ).rows.map((r) => r.column_name);
    expect(cols).toEqual([
      "id",
      "team_id",
      "thread_header",
      "protocol_version",
      "initialize",
      "created_at",
      "last_seen_at",
      "ended_at",
      "token_digest",
    ]);
  });
});
