// `doctor` with SLAUDE_DATABASE_URL, against a real PostgreSQL: it names the store, checks that the
// server answers and how far the schema is migrated, that the role is not a superuser, that no other
// role may connect to the database, and that every stored credential opens with the configured keys;
// it never prints the URL's password.
import { randomBytes } from "node:crypto";
import net from "node:net";
import path from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { readPgMigrations } from "../../src/store/postgres/migrator.js";
import { newKeyB64, TempDirs, writeRegistryFile } from "../support/foundation.js";
import { type PgCluster, startPostgres } from "../support/postgres.js";
import { runInProcess } from "./run.js";

const tmp = new TempDirs();
let cluster: PgCluster;
beforeAll(async () => {
  cluster = await startPostgres();
});
afterEach(() => tmp.cleanup());
afterAll(async () => {
  await cluster?.stop();
});

function env(url: string, key = newKeyB64()): NodeJS.ProcessEnv {
  const dir = tmp.make();
  return {
    SLAUDE_DATA_DIR: path.join(dir, "data"),
    SLAUDE_REGISTRY_PATH: writeRegistryFile(dir),
    SLAUDE_ENCRYPTION_KEY: key,
    SLAUDE_CHROMIUM_PATH: path.join(dir, "none"),
    SLAUDE_DATABASE_URL: url,
    USER: "tester",
  };
}

const latest = readPgMigrations().at(-1)!.version;

describe("doctor on PostgreSQL", () => {
  it("reports the store, the pending migrations, then an up-to-date schema and an ordinary role, never the password", async () => {
    const url = await cluster.createDatabase();
    const e = env(url);
    const fresh = await runInProcess(["doctor"], e);
    expect(fresh.code).toBe(0);
    expect(fresh.stdout).toMatch(
      new RegExp(`^ok {4}store: PostgreSQL at 127\\.0\\.0\\.1:${cluster.port}/\\w+ \\(SLAUDE_DATABASE_URL`, "m"),
    );
    expect(fresh.stdout).toMatch(
      new RegExp(`^WARN {2}database: PostgreSQL \\d+\\S* at .*, schema 0, ${latest} migration\\(s\\) pending$`, "m"),
    );
    expect(fresh.stdout).toMatch(/^ok {4}database role: slaude is an ordinary role \(not a superuser\)$/m);
    expect(fresh.stdout).not.toContain("slaude.db");
    expect(fresh.stdout + fresh.stderr).not.toContain(cluster.password);

    expect((await runInProcess(["migrate"], e)).code).toBe(0);
    const migrated = await runInProcess(["doctor"], e);
    expect(migrated.stdout).toMatch(
      new RegExp(`^ok {4}database: PostgreSQL .*, schema ${latest} \\(up to date\\), answering$`, "m"),
    );
    expect(migrated.stdout).toMatch(
      /^ok {4}stored credentials: every stored credential is sealed under a configured key$/m,
    );
  });

  it("a superuser role is a warning (an error in production); credentials under an unknown key are an error", async () => {
    const password = randomBytes(8).toString("hex");
    const su = `su_${randomBytes(3).toString("hex")}`;
    await cluster.superQuery(`CREATE ROLE ${su} LOGIN SUPERUSER PASSWORD '${password}'`);
    const url = await cluster.createDatabase();
    const suUrl = url.replace(`${cluster.role}:${cluster.password}@`, `${su}:${password}@`);
    const r = await runInProcess(["doctor"], env(suUrl));
    expect(r.stdout).toMatch(new RegExp(`^WARN {2}database role: ${su} is a superuser`, "m"));
    const prod = await runInProcess(["doctor"], { ...env(suUrl), NODE_ENV: "production" });
    expect(prod.stdout).toMatch(new RegExp(`^ERROR database role: ${su} is a superuser`, "m"));
    expect(prod.code).toBe(1);
    expect(r.stdout + prod.stdout).not.toContain(password);

    const e = env(url);
    expect(
      (
        await runInProcess(
          ["connections", "add", "--team", "T1", "--service", "svc", "--scope", "user", "--owner", "U1"],
          e,
          { stdin: "secret" },
        )
      ).code,
    ).toBe(0);
    const otherKey = await runInProcess(["doctor"], { ...e, SLAUDE_ENCRYPTION_KEY: newKeyB64() });
    expect(otherKey.code).toBe(1);
    expect(otherKey.stdout).toMatch(
      /^ERROR stored credentials: credentials sealed under a key that is not configured: 1 under key \S+; serve refuses to start$/m,
    );
  });

  it("a database other roles may connect to is a warning (an error in production) until CONNECT and TEMP are revoked from PUBLIC", async () => {
    const url = await cluster.createDatabase();
    const db = new URL(url).pathname.slice(1);
    const e = env(url);
    const fresh = await runInProcess(["doctor"], e);
    expect(fresh.stdout).toMatch(
      new RegExp(
        `^WARN {2}database access: PUBLIC has CONNECT and TEMP on database ${db}: every role on the server can connect`,
        "m",
      ),
    );
    expect(fresh.stdout).toContain(
      `REVOKE CONNECT, TEMP ON DATABASE "${db}" FROM PUBLIC; GRANT CONNECT, TEMP ON DATABASE "${db}" TO "slaude"`,
    );
    const prod = await runInProcess(["doctor"], { ...e, NODE_ENV: "production" });
    expect(prod.stdout).toMatch(/^ERROR database access: PUBLIC has CONNECT and TEMP/m);
    expect(prod.code).toBe(1);

    // What the fix says, run by the database's owner (the broker's own role).
    const owner = `postgres://${cluster.role}:${cluster.password}@127.0.0.1:${cluster.port}/${db}`;
    const c = new pg.Client({ connectionString: owner });
    await c.connect();
    await c.query(
      `REVOKE CONNECT, TEMP ON DATABASE "${db}" FROM PUBLIC; GRANT CONNECT, TEMP ON DATABASE "${db}" TO "slaude"`,
    );
    await c.end();
    expect((await runInProcess(["doctor"], e)).stdout).toMatch(
      new RegExp(`^ok {4}database access: only slaude \\(and superusers\\) may connect to database ${db}$`, "m"),
    );

    const other = `reader_${randomBytes(3).toString("hex")}`;
    await cluster.superQuery(`CREATE ROLE ${other} LOGIN PASSWORD 'x${randomBytes(6).toString("hex")}'`);
    await cluster.superQuery(`GRANT CONNECT ON DATABASE "${db}" TO ${other}`);
    expect((await runInProcess(["doctor"], e)).stdout).toMatch(
      new RegExp(`^WARN {2}database access: other roles may connect to database ${db}: ${other}$`, "m"),
    );
  });

  it("an unreachable server is an error naming host and port, without the password", async () => {
    const closed = await new Promise<number>((resolve) => {
      const srv = net.createServer().listen(0, "127.0.0.1", () => {
        const port = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(port));
      });
    });
    const canary = `pw${randomBytes(6).toString("hex")}`;
    const r = await runInProcess(["doctor"], env(`postgres://slaude:${canary}@127.0.0.1:${closed}/nowhere`));
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`^ERROR database: cannot connect to 127\\.0\\.0\\.1:${closed}/nowhere: `, "m"));
    expect(r.stdout + r.stderr).not.toContain(canary);
  });
});
