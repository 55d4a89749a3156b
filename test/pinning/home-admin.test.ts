import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { observe } from "../../src/pinning/policy.js";
import { connectionsBlocks } from "../../src/slack/blocks.js";
import { connectionsModel } from "../../src/slack/home.js";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite-store.js";

// The App Home's admin section lists the team's tool definition changes waiting for a decision;
// a non-admin sees none, and another team's changes never appear.

let dir: string;
let store: SqliteStore;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-home-pins-"));
  store = openSqliteStore(path.join(dir, "db.sqlite")).store;
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const seen = (tool: string, hash: string) => ({ tool, hash, definition: "{}" });
const admins = new Set(["UADMIN01"]);
const grants = { isAdmin: async (_team: string, u: string) => admins.has(u) };

describe("App Home: tool definition changes", () => {
  it("an admin sees this team's quarantined and new tools with how to decide; others see nothing of them", async () => {
    for (const team of ["T1", "T2"]) {
      await store.toolPins.update(team, "gitlab", (cur) =>
        observe(cur, [seen("create_issue", "h1")], { teamId: team, service: "gitlab", at: 1 }),
      );
      await store.toolPins.update(team, "gitlab", (cur) =>
        observe(cur, [seen("create_issue", `h2-${team}`), seen(`export_${team}`, "h3")], {
          teamId: team,
          service: "gitlab",
          at: 2,
        }),
      );
    }
    const text = (blocks: ReturnType<typeof connectionsBlocks>) => JSON.stringify(blocks);
    const adminView = text(connectionsBlocks(await connectionsModel({ store, grants }, "T1", "UADMIN01")));
    expect(adminView).toContain("Tool definition changes (admin)");
    expect(adminView).toContain("create_issue · quarantined");
    expect(adminView).toContain("export_T1 · new");
    expect(adminView).toContain("registry changes --diff");
    expect(adminView).not.toContain("export_T2");
    const userView = text(connectionsBlocks(await connectionsModel({ store, grants }, "T1", "UUSER001")));
    expect(userView).not.toContain("Tool definition changes");
  });
});
