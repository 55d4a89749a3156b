// The admin CLI on PostgreSQL (SLAUDE_DATABASE_URL), and migrate-store from a SQLite file, against a real cluster.
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { readPgMigrations } from "../../src/store/postgres/migrator.js";
import { openPostgresStore } from "../../src/store/postgres/pg-store.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { bindingOf } from "../../src/vault/binding.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";
import { DEMO_TEAM, LOCAL_TEAM_ID } from "../../src/workspace/local/model.js";
import { newKeyB64, TempDirs, writeRegistryFile } from "../support/foundation.js";
import { type PgCluster, startPostgres } from "../support/postgres.js";
import { type CliResult, runInProcess } from "./run.js";

const tmp = new TempDirs();
let cluster: PgCluster;
beforeAll(async () => {
  cluster = await startPostgres();
});
afterEach(() => tmp.cleanup());
afterAll(async () => {
  await cluster?.stop();
});

function setup(env: NodeJS.ProcessEnv = {}) {
  const dir = tmp.make();
  const dataDir = path.join(dir, "data");
  const key = newKeyB64();
  const base: NodeJS.ProcessEnv = {
    SLAUDE_DATA_DIR: dataDir,
    SLAUDE_REGISTRY_PATH: writeRegistryFile(dir),
    SLAUDE_ENCRYPTION_KEY: key,
    USER: "tester",
    ...env,
  };
  const clock = new ManualClock();
  const cli = (args: string[], opts: { stdin?: string; env?: NodeJS.ProcessEnv } = {}) =>
    runInProcess(args, { ...base, ...opts.env }, { clock, ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}) });
  return { key, dbPath: path.join(dataDir, "slaude.db"), clock, cli };
}

function storedId(r: CliResult): string {
  expect(r.code, r.stderr).toBe(0);
  const id = /^stored (conn_\S+) /.exec(r.stdout)?.[1];
  if (!id) throw new Error(`no id in ${JSON.stringify(r.stdout)}`);
  return id;
}

const jsonLines = (text: string): Record<string, unknown>[] =>
  text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe("the admin CLI with SLAUDE_DATABASE_URL", () => {
  it("migrates, adds, lists, revokes and audits on PostgreSQL, never touching a SQLite file", async () => {
    const url = await cluster.createDatabase();
    const { cli, dbPath, clock } = setup({ SLAUDE_DATABASE_URL: url });
    const versions = readPgMigrations().map((m) => m.version);
    expect(await cli(["migrate"])).toMatchObject({
      code: 0,
      stdout: `applied postgres ${versions.join(", ")}; schema is at ${versions.at(-1)}\n`,
    });
    expect((await cli(["migrate"])).stdout).toBe(`nothing to do; postgres schema is at ${versions.at(-1)}\n`);
    const id = storedId(
      await cli(["connections", "add", "--team", "T1", "--service", "svc", "--scope", "user", "--owner", "U1"], {
        stdin: "pg-secret",
      }),
    );
    expect(
      jsonLines((await cli(["connections", "list", "--json"])).stdout).map((c) => [c.id, c.status, c.hasSecret]),
    ).toEqual([[id, "active", true]]);
    clock.advance(1000);
    expect(await cli(["connections", "revoke", id, "--reason", "left"])).toMatchObject({
      code: 0,
      stdout: `revoked ${id}\n`,
    });
    expect((await cli(["connections", "revoke", id])).code).toBe(1);
    const audit = jsonLines((await cli(["audit", "--jsonl"])).stdout);
    expect(audit.map((a) => a.event)).toEqual(["connection_created", "connection_revoked"]);
    // What the CLI wrote is what a server on the same database sees.
    const { store } = await openPostgresStore({ url });
    try {
      expect(await store.connections.get(id)).toMatchObject({ status: "revoked", endedReason: "left", sealed: null });
    } finally {
      await store.close();
    }
    expect(existsSync(dbPath)).toBe(false);
  });
});

describe("migrate-store", () => {
  it("copies every table from the SQLite file, credentials still sealed and openable with the same key, verified by counts", async () => {
    const { cli, dbPath, clock, key } = setup();
    const user = storedId(
      await cli(["connections", "add", "--team", "T1", "--service", "svc", "--scope", "user", "--owner", "U1"], {
        stdin: "canary-user-secret",
      }),
    );
    const thread = storedId(
      await cli(
        [
          "connections",
          "add",
          "--team",
          "T1",
          "--service",
          "svc",
          "--scope",
          "thread",
          "--owner",
          "U2",
          "--channel",
          "C1",
          "--thread",
          "1.1",
        ],
        { stdin: "s2" },
      ),
    );
    const gone = storedId(
      await cli(["connections", "add", "--team", "T1", "--service", "svc", "--scope", "shared"], { stdin: "s3" }),
    );
    expect((await cli(["connections", "revoke", gone])).code).toBe(0);
    const at = clock.now();
    const sqlite = openSqliteStore(dbPath).store;
    try {
      await sqlite.grants.create(
        {
          id: "grant_1",
          connectionId: thread,
          teamId: "T1",
          channelId: "C1",
          threadTs: "1.1",
          ownerUserId: "U2",
          borrowerUserId: "U3",
          service: "svc",
          createdAt: at,
        },
        [{ at, event: "grant_created" }],
      );
      await sqlite.approvals.create(
        {
          id: "appr_1",
          nonce: "n1",
          connectionId: thread,
          teamId: "T1",
          channelId: "C1",
          threadTs: "1.1",
          ownerUserId: "U2",
          borrowerUserId: "U3",
          service: "svc",
          tool: "write_thing",
          argsHash: "h",
          status: "pending",
          createdAt: at,
          expiresAt: at + 60_000,
          decidedAt: null,
          decidedBy: null,
          cardChannel: null,
          cardTs: null,
        },
        [{ at, event: "approval_requested" }],
      );
      await sqlite.loginSessions.create(
        {
          id: "login_1",
          tokenHash: "th",
          teamId: "T1",
          userId: "U1",
          service: "svc",
          scope: "user",
          channelId: null,
          threadTs: null,
          createdAt: at,
          expiresAt: at + 1000,
        },
        [],
      );
      await sqlite.toolMetadata.put({
        teamId: "T1",
        service: "svc",
        contentHash: "c",
        tools: [{ name: "read_thing" }],
        fetchedAt: at,
      });
      // The local workspace's tables come along too (notes keep their ids, threads their order).
      await sqlite.workspace.seed({ teamId: LOCAL_TEAM_ID, users: DEMO_TEAM.users, channels: DEMO_TEAM.channels }, at);
      for (let i = 0; i < 3; i++)
        await sqlite.workspace.addNote(
          { teamId: LOCAL_TEAM_ID, channelId: "C_GENERAL", threadTs: `1.${i}` },
          `note ${i}`,
          at,
          { maxPerThread: 5, maxThreads: 5 },
        );
    } finally {
      await sqlite.close();
    }
    const url = await cluster.createDatabase();
    const r = await cli(["migrate-store", "--to", url]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("password in --to is visible");
    for (const [table, n] of [
      ["connections", 3],
      ["grants", 1],
      ["approvals", 1],
      ["login_sessions", 1],
      ["tool_metadata", 1],
      ["audit", 6],
    ] as const) {
      expect(r.stdout).toMatch(new RegExp(`^${table}\\s+${n}\\s+${n}$`, "m"));
    }
    expect(r.stdout).not.toContain("canary-user-secret");

    const { store } = await openPostgresStore({ url });
    const src = openSqliteStore(dbPath).store;
    try {
      const vault = new Vault(KeyRing.fromBase64(key));
      const copied = (await store.connections.get(user))!;
      expect(copied.sealed).toEqual((await src.connections.get(user))!.sealed);
      expect(vault.openCredential(copied.sealed!, bindingOf(copied))).toEqual({
        kind: "fields",
        fields: { token: "canary-user-secret" },
      });
      expect((await store.connections.get(gone))!).toMatchObject({ status: "revoked", sealed: null });
      expect(await store.audit.query({})).toEqual(await src.audit.query({}));
      // New audit rows continue after the copied sequence numbers.
      await store.audit.append([{ at, event: "admin_action", actor: "cli:test" }]);
      expect((await store.audit.query({ take: "latest", limit: 1 }))[0]!.seq).toBe(7);
      expect(await store.toolMetadata.get("T1", "svc")).toEqual(await src.toolMetadata.get("T1", "svc"));
      expect(await store.workspace.channels(LOCAL_TEAM_ID)).toEqual(await src.workspace.channels(LOCAL_TEAM_ID));
      expect(await store.workspace.threads(LOCAL_TEAM_ID, "C_GENERAL", 10)).toEqual(
        await src.workspace.threads(LOCAL_TEAM_ID, "C_GENERAL", 10),
      );
      await store.workspace.addNote(
        { teamId: LOCAL_TEAM_ID, channelId: "C_GENERAL", threadTs: "1.0" },
        "after the copy",
        at + 1,
        { maxPerThread: 5, maxThreads: 5 },
      );
      expect(
        (await store.workspace.notes({ teamId: LOCAL_TEAM_ID, channelId: "C_GENERAL", threadTs: "1.0" }, 10)).map(
          (n) => n.text,
        ),
      ).toEqual(["note 0", "after the copy"]);
    } finally {
      await store.close();
      await src.close();
    }
    // The CLI now runs on the copy.
    expect(
      jsonLines((await cli(["connections", "list", "--json"], { env: { SLAUDE_DATABASE_URL: url } })).stdout)
        .map((c) => c.id)
        .sort(),
    ).toEqual([user, thread].sort());
    // A second copy into a database that holds rows is refused, and changes nothing.
    const again = await cli(["migrate-store"], { env: { SLAUDE_DATABASE_URL: url } });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already holds \d+ row\(s\)/);
  });
});
