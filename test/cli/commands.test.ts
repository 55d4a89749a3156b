// The CLI commands, driven in-process through runCli with a ManualClock and real SQLite files.
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { registryJsonSchema } from "../../src/config/registry-json-schema.js";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { bindingOf } from "../../src/vault/binding.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";
import { newKeyB64, TempDirs, writeRegistryFile } from "../support/foundation.js";
import { type CliResult, runInProcess } from "./run.js";

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

function setup(key = newKeyB64()) {
  const dir = tmp.make();
  const dataDir = path.join(dir, "data");
  const env: NodeJS.ProcessEnv = {
    SLAUDE_DATA_DIR: dataDir,
    SLAUDE_REGISTRY_PATH: writeRegistryFile(dir),
    SLAUDE_ENCRYPTION_KEY: key,
    USER: "tester",
  };
  const clock = new ManualClock();
  const cli = (args: string[], opts: { stdin?: string; env?: NodeJS.ProcessEnv } = {}) =>
    runInProcess(args, { ...env, ...opts.env }, { clock, ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}) });
  return { dir, key, dataDir, dbPath: path.join(dataDir, "slaude.db"), env, clock, cli };
}

/** Opens the CLI's database from the test, runs `fn`, closes it. */
async function withStore<T>(dbPath: string, fn: (s: SqliteStore) => Promise<T>): Promise<T> {
  const { store } = openSqliteStore(dbPath);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

function storedId(r: CliResult): string {
  expect(r.code, r.stderr).toBe(0);
  const id = /^stored (conn_\S+) /.exec(r.stdout)?.[1];
  if (!id) throw new Error(`no id in ${JSON.stringify(r.stdout)}`);
  return id;
}

function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const ADD_SHARED = ["connections", "add", "--team", "T1", "--service", "svc", "--scope", "shared"];

describe("connections", () => {
  it("add supports user and thread scopes, token fields and JSON credentials", async () => {
    const { cli, dbPath, key } = setup();
    const user = storedId(
      await cli(
        [
          "connections",
          "add",
          "--team",
          "T1",
          "--service",
          "svc",
          "--scope",
          "user",
          "--owner",
          "U1",
          "--field",
          "api_key",
          "--ttl",
          "30m",
        ],
        { stdin: "user-secret" },
      ),
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
          "--format",
          "json",
        ],
        {
          stdin: JSON.stringify({ kind: "oauth", accessToken: "at-secret", refreshToken: "rt-secret" }),
        },
      ),
    );
    const vault = new Vault(KeyRing.fromBase64(key));
    await withStore(dbPath, async (s) => {
      const u = (await s.connections.get(user))!;
      expect(u).toMatchObject({ scope: "user", ownerUserId: "U1", expiresAt: u.createdAt + 30 * 60_000 });
      expect(vault.openCredential(u.sealed, bindingOf(u))).toEqual({
        kind: "fields",
        fields: { api_key: "user-secret" },
      });
      const t = (await s.connections.get(thread))!;
      expect(t).toMatchObject({ scope: "thread", ownerUserId: "U2", channelId: "C1", threadTs: "1.1" });
      expect(vault.openCredential(t.sealed, bindingOf(t))).toMatchObject({
        kind: "oauth",
        accessToken: "at-secret",
        refreshToken: "rt-secret",
      });
    });
  });

  it("add refuses bad input without storing anything or echoing the secret", async () => {
    const { cli, dbPath } = setup();
    const secret = "do-not-echo-4411";
    const cases: [string[], string | undefined, number, RegExp][] = [
      [["connections", "add", "--team", "T1", "--service", "svc", "--scope", "user"], secret, 2, /--owner is required/],
      [[...ADD_SHARED, "--owner", "U1"], secret, 2, /shared connection has no owner/],
      [["connections", "add", "--service", "svc"], secret, 2, /--team/],
      [[...ADD_SHARED, "--ttl", "soon"], secret, 2, /--ttl/],
      [[...ADD_SHARED, "--bogus"], secret, 2, /bogus/],
      [ADD_SHARED, "", 1, /no secret on standard input/],
      [[...ADD_SHARED, "--format", "json"], `{"kind":"fields","fields":{"token":"${secret}"`, 1, /not valid JSON/],
      [
        [...ADD_SHARED, "--format", "json"],
        JSON.stringify({ kind: "fields", fields: { token: secret }, extra: secret }),
        1,
        /invalid at/,
      ],
      [
        ["connections", "add", "--team", "T1", "--service", "other", "--scope", "shared"],
        secret,
        1,
        /does not allow scope "shared"/,
      ],
    ];
    for (const [args, stdin, code, message] of cases) {
      const r = await cli(args, stdin === undefined ? {} : { stdin });
      expect(r.code, args.join(" ")).toBe(code);
      expect(r.stderr).toMatch(message);
      expect(r.stdout + r.stderr).not.toContain(secret);
    }
    await withStore(dbPath, async (s) => {
      expect(await s.connections.list({})).toEqual([]);
      expect(await s.audit.count()).toBe(0);
    });
  });

  it("list shows live connections, --all the ended ones too", async () => {
    const { cli, clock } = setup();
    const a = storedId(await cli(ADD_SHARED, { stdin: "s1" }));
    clock.advance(1);
    const b = storedId(
      await cli(["connections", "add", "--team", "T1", "--service", "svc", "--scope", "user", "--owner", "U1"], {
        stdin: "s2",
      }),
    );
    expect((await cli(["connections", "revoke", a])).code).toBe(0);
    const live = jsonLines((await cli(["connections", "list", "--json"])).stdout);
    expect(live.map((c) => c.id)).toEqual([b]);
    const all = jsonLines((await cli(["connections", "list", "--json", "--all"])).stdout);
    expect(all.map((c) => [c.id, c.status, c.hasSecret])).toEqual([
      [a, "revoked", false],
      [b, "active", true],
    ]);
    expect(jsonLines((await cli(["connections", "list", "--json", "--owner", "U1"])).stdout).map((c) => c.id)).toEqual([
      b,
    ]);
    const table = (await cli(["connections", "list"])).stdout;
    expect(table).toMatch(/^ID\s+TEAM\s+OWNER/);
    expect(table).toContain(b);
    expect(table).not.toContain(a);
  });

  it("revoke wipes the ciphertext, revokes grants and audits; a second revoke fails", async () => {
    const { cli, dbPath, clock } = setup();
    const id = storedId(
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
          "U1",
          "--channel",
          "C1",
          "--thread",
          "1.1",
        ],
        { stdin: "s" },
      ),
    );
    await withStore(dbPath, (s) =>
      s.grants.create(
        {
          id: "grant_1",
          connectionId: id,
          teamId: "T1",
          channelId: "C1",
          threadTs: "1.1",
          ownerUserId: "U1",
          borrowerUserId: "U2",
          service: "svc",
          createdAt: clock.now(),
        },
        [],
      ),
    );
    clock.advance(1000);
    const r = await cli(["connections", "revoke", id, "--reason", "left the company"]);
    expect(r).toMatchObject({ code: 0, stdout: `revoked ${id}\n` });
    await withStore(dbPath, async (s) => {
      const raw = s.db
        .prepare(
          "SELECT status, ended_reason, ended_at, key_id, secret_nonce, secret_ct, secret_tag FROM connections WHERE id = ?",
        )
        .get(id);
      expect(raw).toEqual({
        status: "revoked",
        ended_reason: "left the company",
        ended_at: clock.now(),
        key_id: null,
        secret_nonce: null,
        secret_ct: null,
        secret_tag: null,
      });
      expect(await s.grants.get("grant_1")).toMatchObject({ revokedAt: clock.now(), revokedBy: "cli:tester" });
      expect((await s.audit.query({ connectionId: id })).map((e) => e.event)).toEqual([
        "connection_created",
        "connection_revoked",
        "grant_revoked",
      ]);
    });
    const again = await cli(["connections", "revoke", id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("already revoked");
    const missing = await cli(["connections", "revoke", "conn_nope"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no connection conn_nope");
    expect((await cli(["connections", "revoke"])).code).toBe(2);
  });
});

describe("grants", () => {
  it("lists and revokes grants, with an audit row", async () => {
    const { cli, dbPath, clock } = setup();
    const id = storedId(
      await cli(["connections", "add", "--team", "T1", "--service", "svc", "--scope", "user", "--owner", "U1"], {
        stdin: "s",
      }),
    );
    await withStore(dbPath, async (s) => {
      for (const [gid, borrower] of [
        ["grant_a", "U2"],
        ["grant_b", "U3"],
      ] as const) {
        await s.grants.create(
          {
            id: gid,
            connectionId: id,
            teamId: "T1",
            channelId: "C1",
            threadTs: "1.1",
            ownerUserId: "U1",
            borrowerUserId: borrower,
            service: "svc",
            createdAt: clock.now(),
          },
          [],
        );
      }
    });
    const listed = jsonLines((await cli(["grants", "list", "--json"])).stdout);
    expect(listed.map((g) => g.id)).toEqual(["grant_a", "grant_b"]);
    expect(jsonLines((await cli(["grants", "list", "--json", "--borrower", "U3"])).stdout).map((g) => g.id)).toEqual([
      "grant_b",
    ]);
    expect((await cli(["grants", "list"])).stdout).toMatch(/^ID\s+CONNECTION\s+SERVICE/);

    clock.advance(500);
    const r = await cli(["grants", "revoke", "grant_a"]);
    expect(r).toMatchObject({ code: 0, stdout: "revoked grant_a\n" });
    expect(jsonLines((await cli(["grants", "list", "--json"])).stdout).map((g) => g.id)).toEqual(["grant_b"]);
    const all = jsonLines((await cli(["grants", "list", "--json", "--all"])).stdout);
    expect(all.find((g) => g.id === "grant_a")).toMatchObject({ revokedAt: clock.now(), revokedBy: "cli:tester" });
    await withStore(dbPath, async (s) => {
      expect(await s.audit.query({ event: "grant_revoked" })).toEqual([
        expect.objectContaining({
          connectionId: id,
          ownerUserId: "U1",
          callerUserId: "U2",
          actor: "cli:tester",
          at: clock.now(),
        }),
      ]);
    });

    const again = await cli(["grants", "revoke", "grant_a"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("already revoked");
    expect((await cli(["grants", "revoke", "grant_zzz"])).code).toBe(1);
    expect((await cli(["grants", "revoke"])).code).toBe(2);
  });
});

describe("audit", () => {
  it("--jsonl prints valid JSON lines and the filters narrow them", async () => {
    const { cli, clock } = setup();
    const a = storedId(await cli(ADD_SHARED, { stdin: "s1" }));
    clock.advance(3_600_000);
    const b = storedId(
      await cli(
        [
          "connections",
          "add",
          "--team",
          "T2",
          "--service",
          "other",
          "--scope",
          "thread",
          "--owner",
          "U5",
          "--channel",
          "C9",
          "--thread",
          "9.9",
        ],
        { stdin: "s2" },
      ),
    );
    clock.advance(60_000);
    expect((await cli(["connections", "revoke", b])).code).toBe(0);

    const all = await cli(["audit", "--jsonl"]);
    expect(all.code).toBe(0);
    const lines = all.stdout.trimEnd().split("\n");
    const rows = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows.map((r) => r.event)).toEqual(["connection_created", "connection_created", "connection_revoked"]);
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3]);
    expect(rows[0]).toMatchObject({ connectionId: a, time: new Date(rows[0]!.at as number).toISOString() });

    const events = async (...args: string[]) =>
      jsonLines((await cli(["audit", "--jsonl", ...args])).stdout).map((r) => `${r.event}:${r.connectionId}`);
    expect(await events("--event", "connection_revoked")).toEqual([`connection_revoked:${b}`]);
    expect(await events("--service", "svc")).toEqual([`connection_created:${a}`]);
    expect(await events("--team", "T2")).toEqual([`connection_created:${b}`, `connection_revoked:${b}`]);
    expect(await events("--user", "U5")).toEqual([`connection_created:${b}`, `connection_revoked:${b}`]);
    expect(await events("--connection", a)).toEqual([`connection_created:${a}`]);
    expect(await events("--since", "30m")).toEqual([`connection_created:${b}`, `connection_revoked:${b}`]);
    expect(await events("--until", new Date(clock.now() - 60_000).toISOString())).toEqual([`connection_created:${a}`]);
    expect(await events("--limit", "1")).toEqual([`connection_created:${a}`]);

    const table = await cli(["audit"]);
    expect(table.stdout).toMatch(/^SEQ\s+TIME\s+EVENT/);
    expect((await cli(["audit", "--since", "yesterday-ish"])).code).toBe(2);
    expect((await cli(["audit", "--limit", "0"])).code).toBe(2);
  });
});

describe("keys", () => {
  it("rotate re-encrypts under the new key with the old one in SLAUDE_ENCRYPTION_KEY_PREVIOUS", async () => {
    const keyA = newKeyB64();
    const keyB = newKeyB64();
    const { cli, dbPath } = setup(keyA);
    const ids = [
      storedId(await cli(ADD_SHARED, { stdin: "shared-secret" })),
      storedId(
        await cli(["connections", "add", "--team", "T1", "--service", "svc", "--scope", "user", "--owner", "U1"], {
          stdin: "user-secret",
        }),
      ),
    ];
    // Without the old key the rotation refuses and changes nothing.
    const refused = await cli(["keys", "rotate"], { env: { SLAUDE_ENCRYPTION_KEY: keyB } });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/no key with id/);
    const idA = KeyRing.fromBase64(keyA).primaryId;
    const idB = KeyRing.fromBase64(keyB).primaryId;
    await withStore(dbPath, async (s) =>
      expect((await s.connections.list({})).map((c) => c.sealed?.keyId)).toEqual([idA, idA]),
    );

    const r = await cli(["keys", "rotate"], {
      env: { SLAUDE_ENCRYPTION_KEY: keyB, SLAUDE_ENCRYPTION_KEY_PREVIOUS: keyA },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`re-encrypted 2 credential(s) and 0 installation(s) under key ${idB}\n`);

    const onlyB = new Vault(KeyRing.fromBase64(keyB));
    await withStore(dbPath, async (s) => {
      const secrets = [];
      for (const id of ids) {
        const c = (await s.connections.get(id))!;
        expect(c.sealed!.keyId).toBe(idB);
        const cred = onlyB.openCredential(c.sealed, bindingOf(c));
        secrets.push(cred.kind === "fields" ? cred.fields.token : undefined);
      }
      expect(secrets).toEqual(["shared-secret", "user-secret"]);
      expect(await s.audit.query({ event: "keys_rotated" })).toEqual([
        expect.objectContaining({ decision: idB, actor: "cli:tester" }),
      ]);
    });
    // After rotation the new key alone serves the CLI.
    expect((await cli(["keys", "rotate"], { env: { SLAUDE_ENCRYPTION_KEY: keyB } })).stdout).toContain(
      "re-encrypted 2",
    );
  });

  it("generate prints a valid new key; a malformed key is a configuration error naming the variable", async () => {
    const { cli } = setup();
    const g = await cli(["keys", "generate"]);
    expect(g.code).toBe(0);
    expect(() => KeyRing.fromBase64(g.stdout.trim())).not.toThrow();
    const canary = "CANARY-key-value-0c0c";
    const bad = await cli(["keys", "rotate"], { env: { SLAUDE_ENCRYPTION_KEY: canary } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("SLAUDE_ENCRYPTION_KEY");
    expect(bad.stderr).not.toContain(canary);
  });
});

describe("migrate, registry, help", () => {
  it("migrate applies once, then has nothing to do", async () => {
    const { cli } = setup();
    expect((await cli(["migrate"])).stdout).toMatch(/^applied 1(, \d+)*; schema is at \d+\n$/);
    expect((await cli(["migrate"])).stdout).toMatch(/^nothing to do; schema is at \d+\n$/);
  });

  it("registry schema prints the JSON Schema; check validates a file", async () => {
    const { cli, env } = setup();
    const schema = await cli(["registry", "schema"]);
    expect(JSON.parse(schema.stdout)).toEqual(registryJsonSchema());
    const ok = await cli(["registry", "check", env.SLAUDE_REGISTRY_PATH!]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("svc: stdio, capture paste, ttl 60m, 2 classified tool(s)");
    const missing = await cli(["registry", "check", "/nonexistent/services.json"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("/nonexistent/services.json");
  });

  it("help exits 0, no command and unknown commands exit 2", async () => {
    const { cli } = setup();
    expect((await cli(["help"])).code).toBe(0);
    expect((await cli([])).code).toBe(2);
    const unknown = await cli(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "frobnicate"');
  });
});
