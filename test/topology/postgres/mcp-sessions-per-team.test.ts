import { describe, expect, it } from "vitest";
import { isLive } from "../../../src/server/session-records.js";
import { PostgresTopology } from "../../../src/topology/postgres/postgres-topology.js";
import { postgresStores } from "../../support/postgres-stores.js";

// The per-team cap on live MCP session records across replicas (issue 20 item 9): a team over it
// ends only its own idle sessions, or is refused (teamFull); another team opens meanwhile.

const pg = postgresStores();
const INIT = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "host", version: "1" } };
const rec = (id: string, teamId: string, at: number) => ({
  id,
  teamId,
  threadHeader: `${teamId}/C1/1700000000.000100`,
  protocolVersion: "2025-06-18",
  initialize: INIT,
  createdAt: at,
  tokenDigest: `k1:${"d".repeat(64)}`,
});

describe("mcp session records per team (PostgreSQL, two replicas)", () => {
  it("a team at its cap is refused on another replica while busy; another team opens; once idle, only its own session ends", async () => {
    const url = await pg.schema();
    const [a, b] = [
      new PostgresTopology((await pg.store(url)).db).mcpSessions,
      new PostgresTopology((await pg.store(url)).db).mcpSessions,
    ];
    const room = (idleBefore: number) => ({ max: 1_000, idleBefore, maxPerTeam: 2 });
    expect(await a.open(rec("ta1", "TA", 1_000), room(0))).toEqual({ opened: true, ended: 0 });
    expect(await b.open(rec("tb1", "TB", 1_000), room(0))).toEqual({ opened: true, ended: 0 });
    expect(await b.open(rec("ta2", "TA", 2_000), room(0))).toEqual({ opened: true, ended: 0 });
    // TA holds 2 live sessions, none idle (seen after 0): refused, across replicas, nothing written.
    expect(await a.open(rec("ta3", "TA", 3_000), room(0))).toEqual({ opened: false, ended: 0, teamFull: true });
    expect(await a.get("ta3")).toBeUndefined();
    expect(await b.open(rec("tb2", "TB", 3_000), room(0))).toEqual({ opened: true, ended: 0 });
    // Everything seen before 5 s is idle; TB's tb1 is the oldest of all, but only TA's oldest ends.
    expect(await a.open(rec("ta3", "TA", 5_000), room(5_000))).toEqual({ opened: true, ended: 1 });
    expect(isLive(await b.get("ta1"))).toBe(false);
    expect(isLive(await b.get("tb1"))).toBe(true);
    expect(isLive(await b.get("ta2"))).toBe(true);
  });
});
