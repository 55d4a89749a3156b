// A real PostgreSQL for a test file: Debian's server binaries, a cluster in a temp dir on a free
// loopback port, run as an unprivileged user (PostgreSQL refuses root), an ordinary role with a
// password that owns the databases handed out. No binaries means a failing test, never a skipped one.
import { type SpawnSyncReturns, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";

/** The system user the server runs as when the tests run as root. */
export const PG_TEST_USER = "slaude-pg";

/** The directory holding initdb/pg_ctl of the newest installed PostgreSQL; throws with the fix when none is. */
export function postgresBinDir(root = "/usr/lib/postgresql"): string {
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter(
          (v) =>
            /^\d+$/.test(v) &&
            existsSync(path.join(root, v, "bin", "initdb")) &&
            existsSync(path.join(root, v, "bin", "pg_ctl")),
        )
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (!versions.length) {
    throw new Error(
      `PostgreSQL server binaries not found under ${root}/<version>/bin: install Debian's postgresql package ` +
        "(apt-get install -y postgresql; .ci/run does this). The PostgreSQL store tests cannot run without them.",
    );
  }
  return path.join(root, versions[0]!, "bin");
}

interface RunAs {
  readonly uid?: number;
  readonly gid?: number;
  readonly home: string;
}

/** The uid/gid to run the server as: ourselves, or `slaude-pg` (created once) when we are root. */
function serverUser(): RunAs {
  if (process.getuid?.() !== 0) return { home: os.homedir() };
  const lookup = (): SpawnSyncReturns<string> => spawnSync("id", ["-u", PG_TEST_USER], { encoding: "utf8" });
  if (lookup().status !== 0) {
    // Two test files may race to create it: a failed useradd is fine if the user exists afterwards.
    spawnSync("useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_TEST_USER], {
      encoding: "utf8",
    });
    if (lookup().status !== 0)
      throw new Error(`cannot create the unprivileged user ${PG_TEST_USER} for the test PostgreSQL (useradd failed)`);
  }
  const uid = Number(lookup().stdout.trim());
  const gid = Number(spawnSync("id", ["-g", PG_TEST_USER], { encoding: "utf8" }).stdout.trim());
  return { uid, gid, home: "/" };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

/** A running test cluster. */
export interface PgCluster {
  readonly port: number;
  /** The ordinary (non-superuser) role the databases belong to, and its password. */
  readonly role: string;
  readonly password: string;
  /** Creates a fresh database owned by the role; returns its postgres:// URL (password auth over TCP). */
  createDatabase(name?: string): Promise<string>;
  /** A fresh schema in `databaseUrl` (made by its owner role); returns a URL whose search_path is that schema. */
  createSchema(databaseUrl: string): Promise<string>;
  /** Runs SQL as the cluster's superuser (test set-up only: the broker never gets this). */
  superQuery(sql: string, database?: string): Promise<pg.QueryResult>;
  /**
   * Restarts the server as an operator would: fast shutdown (open sessions are cut), then `whileDown`
   * runs against the stopped server, then the same data directory starts again on the same port.
   */
  restart(whileDown?: () => Promise<void>): Promise<void>;
  /** Stops the server (fast shutdown) and deletes its directory. */
  stop(): Promise<void>;
}

let dbSeq = 0;

/**
 * A cluster directory made by initdb once per machine (per server user and version), under the
 * temp dir; built in a private directory and renamed into place, so concurrent test files agree.
 */
function initdbTemplate(
  bin: string,
  who: RunAs,
  run: (cmd: string, args: string[], cwd?: string) => SpawnSyncReturns<string>,
): string {
  const final = path.join(
    os.tmpdir(),
    `slaude-pg-template-${path.basename(path.dirname(bin))}-${who.uid ?? process.getuid?.() ?? "u"}`,
  );
  if (existsSync(path.join(final, "data", "PG_VERSION"))) return final;
  const work = mkdtempSync(path.join(os.tmpdir(), "slaude-pg-initdb-"));
  if (who.uid !== undefined) chownSync(work, who.uid, who.gid!);
  const init = run(
    "initdb",
    [
      "-D",
      path.join(work, "data"),
      "-U",
      "pgsuper",
      "--auth-local=trust",
      "--auth-host=scram-sha-256",
      "-E",
      "UTF8",
      "--no-sync",
      "--no-instructions",
    ],
    work,
  );
  if (init.status !== 0) {
    rmSync(work, { recursive: true, force: true });
    throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  }
  try {
    renameSync(work, final);
  } catch {
    // Another test file won the race: use its template.
    rmSync(work, { recursive: true, force: true });
  }
  return final;
}

/** Starts a cluster: initdb, pg_ctl start on 127.0.0.1:<free port>, role `slaude` with a password. */
export async function startPostgres(): Promise<PgCluster> {
  const bin = postgresBinDir();
  const who = serverUser();
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-pg-"));
  const data = path.join(dir, "data");
  if (who.uid !== undefined) chownSync(dir, who.uid, who.gid!);
  const run = (cmd: string, args: string[], cwd = dir): SpawnSyncReturns<string> =>
    spawnSync(cmd.includes("/") ? cmd : path.join(bin, cmd), args, {
      encoding: "utf8",
      cwd,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: who.home, LANG: "C.UTF-8", LC_ALL: "C.UTF-8" },
      ...(who.uid !== undefined ? { uid: who.uid, gid: who.gid! } : {}),
      timeout: 120_000,
    });
  // initdb is most of a cluster's start-up: run it once per machine and copy its output per test file.
  const template = initdbTemplate(bin, who, run);
  const copy = run("/bin/cp", ["-a", path.join(template, "data"), data]);
  if (copy.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`cannot copy the initdb template: ${copy.stderr}`);
  }
  let port = 0;
  // Durability is irrelevant to a throwaway cluster: fsync off keeps the tests fast on a loaded disk.
  const opts = (): string =>
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=60`;
  const startServer = (): SpawnSyncReturns<string> =>
    run("pg_ctl", ["-D", data, "-l", path.join(dir, "server.log"), "-w", "-t", "90", "-o", opts(), "start"]);
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    const start = startServer();
    if (start.status === 0) break;
    if (attempt >= 2) {
      const log = existsSync(path.join(dir, "server.log")) ? readFileSync(path.join(dir, "server.log"), "utf8") : "";
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`PostgreSQL did not start: ${start.stderr || start.stdout}\n${log}`);
    }
  }
  let stopped = false;
  const stopSync = (mode: "fast" | "immediate"): void => {
    if (stopped) return;
    stopped = true;
    run("pg_ctl", ["-D", data, "-m", mode, "-w", "-t", "60", "stop"]);
    rmSync(dir, { recursive: true, force: true });
  };
  // A test process that dies without afterAll still takes its server down.
  const onExit = (): void => stopSync("immediate");
  process.once("exit", onExit);

  const superClient = (database = "postgres"): pg.Client =>
    new pg.Client({ host: dir, port, user: "pgsuper", database });
  const superQuery = async (sql: string, database?: string): Promise<pg.QueryResult> => {
    const c = superClient(database);
    await c.connect();
    try {
      return await c.query(sql);
    } finally {
      await c.end();
    }
  };
  const role = "slaude";
  const password = randomBytes(12).toString("hex");
  await superQuery(`CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '${password}'`);

  return {
    port,
    role,
    password,
    async createDatabase(name = `slaude_t${process.pid}_${++dbSeq}`): Promise<string> {
      await superQuery(`CREATE DATABASE ${name} OWNER ${role}`);
      return `postgres://${role}:${password}@127.0.0.1:${port}/${name}`;
    },
    async createSchema(databaseUrl: string): Promise<string> {
      const name = `t${process.pid}_${++dbSeq}`;
      const c = new pg.Client({ connectionString: databaseUrl });
      await c.connect();
      try {
        await c.query(`CREATE SCHEMA ${name}`);
      } finally {
        await c.end();
      }
      return `${databaseUrl}?options=${encodeURIComponent(`-c search_path=${name}`)}`;
    },
    superQuery,
    async restart(whileDown?: () => Promise<void>): Promise<void> {
      if (stopped) throw new Error("the test PostgreSQL is stopped");
      const down = run("pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "60", "stop"]);
      if (down.status !== 0) throw new Error(`PostgreSQL did not stop: ${down.stderr || down.stdout}`);
      // The server comes back whatever `whileDown` did; its failure, if any, is thrown after that.
      const during = await whileDown?.().then(
        () => undefined,
        (err: unknown) => ({ err }),
      );
      const up = startServer();
      if (up.status !== 0) {
        const log = readFileSync(path.join(dir, "server.log"), "utf8").slice(-4_000);
        throw new Error(`PostgreSQL did not start again on port ${port}: ${up.stderr || up.stdout}\n${log}`, {
          cause: during?.err,
        });
      }
      if (during) throw during.err;
    },
    async stop(): Promise<void> {
      process.removeListener("exit", onExit);
      stopSync("fast");
    },
  };
}
