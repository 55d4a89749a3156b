import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ALICE, BOB, type Harness, makeHarness, mcpCall } from "../integration/broker-harness.js";
import { hostileRegistryDoc } from "../integration/hostile-registry.js";
import { isAlive, processesReferencing, waitDead } from "../support/proc.js";

// Where the broker runs as root, each child runs under its own unprivileged uid, so one vendor
// cannot read another's credential from /proc/<pid>/environ. CI runs as root: this must run there.

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("per-child uid", () => {
  it("requires root to be meaningful", () => {
    // Fail, don't skip: a security test that silently skips proves nothing.
    expect(process.geteuid?.()).toBe(0);
  });

  it("gives each live child its own uid and keeps it out of the other's /proc environ", async () => {
    h = await makeHarness({
      pool: { maxChildren: 4, idleMs: 60_000, acquireTimeoutMs: 5_000, stopGraceMs: 500, childUidBase: 61_000 },
    });
    const a = await h.connect(ALICE);
    const b = await h.connect(BOB);
    const s = await h.session();
    s.turn.user = ALICE;
    const ea = JSON.parse(
      (await mcpCall(s.client, { tool: "env_dump", on_behalf_of: ALICE })).text.split("\n")[0]!,
    ) as { uid: number };
    s.turn.user = BOB;
    const eb = JSON.parse((await mcpCall(s.client, { tool: "env_dump", on_behalf_of: BOB })).text.split("\n")[0]!) as {
      uid: number;
    };
    const uids = [ea.uid, eb.uid];
    expect(uids.every((u) => u >= 61_000 && u < 61_004)).toBe(true);
    expect(new Set(uids).size).toBe(2);

    const pidA = h.broker.pool.pidOf(a.connection.id)!;
    const pidB = h.broker.pool.pidOf(b.connection.id)!;
    // Root (the broker) can read both; each child's environ is readable only by its own uid.
    expect(readFileSync(`/proc/${pidA}/environ`, "utf8")).toContain(a.token);
    const status = readFileSync(`/proc/${pidB}/status`, "utf8");
    expect(status).toMatch(new RegExp(`^Uid:\\s+${eb.uid}\\s`, "m"));
    // A compromised vendor B runs arbitrary code as B's uid: prove that uid cannot read A's environ.
    const { spawnSync } = await import("node:child_process");
    const peek = spawnSync(process.execPath, ["-e", `require("fs").readFileSync("/proc/${pidA}/environ")`], {
      uid: eb.uid,
      gid: eb.uid,
      encoding: "utf8",
    });
    expect(peek.status).not.toBe(0);
    expect(peek.stderr).toMatch(/EACCES|EPERM/);
  });

  it("kills a grandchild that left the session and dropped its HOME, by its uid, before the uid is reused", async () => {
    const logDir = mkdtempSync(path.join(os.tmpdir(), "slaude-uid-"));
    chmodSync(logDir, 0o777); // the vendor writes its event log there under its own uid
    try {
      h = await makeHarness({
        registryDoc: hostileRegistryDoc(path.join(logDir, "events.log")),
        pool: { maxChildren: 4, idleMs: 60_000, acquireTimeoutMs: 5_000, stopGraceMs: 500, childUidBase: 61_100 },
      });
      const { connection, token } = await h.connect(ALICE, { service: "hostile" });
      const s = await h.session();
      s.turn.user = ALICE;
      const d = await mcpCall(s.client, {
        service: "hostile",
        tool: "daemonize",
        args: { stay: true, scrub: true },
        on_behalf_of: ALICE,
      });
      expect(d.structured.status, d.text).toBe("ok");
      const grandchild = (JSON.parse(d.text.split("\n")[0]!) as { grandchild: number }).grandchild;
      try {
        // Nothing in its environment points at the connection's directory: only its uid does.
        expect(readFileSync(`/proc/${grandchild}/environ`, "utf8")).not.toContain("HOME=");
        expect(processesReferencing([token])).toContain(grandchild);
        expect(readFileSync(`/proc/${grandchild}/status`, "utf8")).toMatch(/^Uid:\s+611\d\d\s/m);
        await h.lifecycle.revoke(connection.id, ALICE, "test");
        expect(await waitDead([grandchild], 10_000)).toEqual([]);
        expect(processesReferencing([token])).toEqual([]);
      } finally {
        if (isAlive(grandchild)) process.kill(grandchild, "SIGKILL");
      }
    } finally {
      rmSync(logDir, { recursive: true, force: true });
    }
  });
});
