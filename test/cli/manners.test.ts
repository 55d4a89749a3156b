// CLI manners: --version, refused flags, a taken port in one line, `registry check FILE` about FILE,
// help that states defaults, audit columns that hold what they say, the development-key warning,
// and `connections list` with the thread as a thread and the same ISO times in --json.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import net, { type AddressInfo } from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { newKeyB64, TempDirs, writeRegistryFile } from "../support/foundation.js";
import { BIN, runBin, runInProcess } from "./run.js";

const tmp = new TempDirs();
const holders: net.Server[] = [];
afterEach(async () => {
  for (const s of holders.splice(0)) await new Promise((r) => s.close(r));
  tmp.cleanup();
});

function setup(env: NodeJS.ProcessEnv = { SLAUDE_ENCRYPTION_KEY: newKeyB64() }) {
  const dir = tmp.make();
  const base: NodeJS.ProcessEnv = {
    SLAUDE_DATA_DIR: path.join(dir, "data"),
    SLAUDE_REGISTRY_PATH: writeRegistryFile(dir),
    USER: "tester",
    ...env,
  };
  const clock = new ManualClock(Date.parse("2026-11-30T10:00:00Z"));
  const cli = (args: string[], opts: { stdin?: string; env?: NodeJS.ProcessEnv } = {}) =>
    runInProcess(args, { ...base, ...opts.env }, { clock, ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}) });
  return { dir, env: base, cli, clock };
}

/** A padded table's rows as objects keyed by header, cut at the header's column starts. */
function cells(table: string): Record<string, string>[] {
  const [head, ...lines] = table.trimEnd().split("\n");
  const starts = [...head!.matchAll(/\S+/g)].map((m) => ({ name: m[0], at: m.index }));
  return lines.map((l) =>
    Object.fromEntries(starts.map((c, i) => [c.name, l.slice(c.at, starts[i + 1]?.at ?? l.length).trim()])),
  );
}

/** A port held by another listener for the rest of the test. */
async function takenPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  holders.push(srv);
  return (srv.address() as AddressInfo).port;
}

describe("CLI manners", () => {
  it("--version prints the package version", async () => {
    const { cli } = setup();
    const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    expect(await cli(["--version"])).toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
  });

  it("refuses options a command does not take with a one-line usage error", async () => {
    const { cli } = setup();
    const cases: [string[], RegExp][] = [
      [["serve", "--bogus"], /^slaude-connect serve: Unknown option '--bogus' \(see slaude-connect --help\)\n$/],
      [["serve", "--port", "90x"], /^--port: expected a port number, got "90x"\n$/],
      [["doctor", "--fix"], /^slaude-connect doctor: takes no options or arguments, got "--fix"/],
      [["migrate", "now"], /^slaude-connect migrate: takes no options or arguments, got "now"/],
      [["keys", "rotate", "--force"], /^slaude-connect keys rotate: takes no options or arguments, got "--force"/],
      [
        ["connections", "list", "--bogus"],
        /^slaude-connect connections: Unknown option '--bogus' \(see slaude-connect --help\)\n$/,
      ],
    ];
    for (const [args, err] of cases) {
      const r = await cli(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(err);
      expect(r.stderr.trimEnd().split("\n"), args.join(" ")).toHaveLength(1);
    }
  });

  it("serve --port binds that port instead of PORT", async () => {
    const { env } = setup();
    const elsewhere = await takenPort();
    // Find a free port, release it, and ask serve for it while PORT points at a taken one.
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const child = spawn(process.execPath, [BIN, "serve", "--port", String(port), "--host", "127.0.0.1"], {
      env: { PATH: process.env.PATH, ...env, PORT: String(elsewhere), SLAUDE_LOG_LEVEL: "error" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    try {
      // Up, or exited (then stderr says why), or still neither after a minute.
      const up = await vi
        .waitFor(
          async () => {
            if (child.exitCode !== null) return false;
            if (
              !(await fetch(`http://127.0.0.1:${port}/healthz`).then(
                (r) => r.ok,
                () => false,
              ))
            )
              throw new Error("not listening yet");
            return true;
          },
          { timeout: 60_000, interval: 100 },
        )
        .catch(() => false);
      expect(up, stderr).toBe(true);
    } finally {
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    }
  });

  it("a taken port is one line naming PORT, exit 1, no stack trace", async () => {
    const { env } = setup();
    const port = await takenPort();
    const r = await runBin(["serve"], { ...env, PORT: String(port), SLAUDE_LOG_LEVEL: "error" });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `error: port ${port} on 127.0.0.1 is already in use: stop what holds it, or choose another with PORT (or --port)\n`,
    );
  });

  it("registry check FILE talks about FILE, not the server's registry setting", async () => {
    const { cli, dir } = setup();
    const bad = path.join(dir, "candidate.json");
    writeFileSync(bad, JSON.stringify({ services: { x: { transport: { type: "stdio" } } } }));
    const invalid = await cli(["registry", "check", bad]);
    expect(invalid.code).toBe(1);
    const lines = invalid.stderr.trimEnd().split("\n");
    expect(lines[0]).toBe(`${bad}: not a valid service registry`);
    for (const l of lines) expect(l.startsWith(`${bad}: `), l).toBe(true);
    expect(lines.join("\n")).toMatch(/services\.x\.transport\.command/);
    const missing = await cli(["registry", "check", path.join(dir, "nope.json")]);
    expect(missing).toMatchObject({ code: 2, stderr: `${path.join(dir, "nope.json")}: cannot be read (ENOENT)\n` });
    for (const r of [invalid, missing]) expect(r.stderr).not.toMatch(/SLAUDE_REGISTRY_PATH|configuration error/);
  });

  it("connections add help states the default scope", async () => {
    const { cli } = setup();
    const r = await cli(["connections"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--scope defaults to shared/);
  });

  it("audit: --event lists the valid kinds on a bad value; columns hold what their names say", async () => {
    const { cli } = setup();
    const bad = await cli(["audit", "--event", "conection_created"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /^--event: unknown kind "conection_created"; one of: call, call_denied, .*connection_created.*keys_rotated, admin_action, result_stored, result_evicted, result_read(, [a-z_]+)*\n$/,
    );

    expect(
      (
        await cli(["connections", "add", "--team", "T1", "--service", "svc", "--scope", "user", "--owner", "U7"], {
          stdin: "s",
        })
      ).code,
    ).toBe(0);
    const rows = cells((await cli(["audit"])).stdout);
    expect(Object.keys(rows[0]!)).toEqual([
      "SEQ",
      "TIME",
      "EVENT",
      "USER",
      "OWNER",
      "SERVICE",
      "TOOL",
      "CONNECTION",
      "DETAIL",
      "ERROR",
      "BY",
    ]);
    // connection_created: no Slack user acted, owner U7, the detail is the scope, done by the CLI operator.
    expect(rows[0]).toMatchObject({
      SEQ: "1",
      TIME: "2026-11-30T10:00:00Z",
      EVENT: "connection_created",
      USER: "",
      OWNER: "U7",
      SERVICE: "svc",
      DETAIL: "user",
      ERROR: "",
      BY: "cli:tester",
    });
  });

  it("keys rotate warns when it re-encrypts under the development key, not with SLAUDE_ENCRYPTION_KEY", async () => {
    const dev = setup({});
    expect((await dev.cli(["connections", "add", "--team", "T1", "--service", "svc"], { stdin: "s" })).code).toBe(0);
    const r = await dev.cli(["keys", "rotate"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /^warning: SLAUDE_ENCRYPTION_KEY is not set: re-encrypting under the DEVELOPMENT key in .*dev-encryption\.key/,
    );
    expect(r.stdout).toMatch(/^re-encrypted 1 credential\(s\)/);
    const real = setup();
    const ok = await real.cli(["keys", "rotate"]);
    expect(ok).toMatchObject({ code: 0, stderr: "" });
  });

  it("connections list shows the thread as a thread, and --json uses the table's ISO times", async () => {
    const { cli } = setup();
    const add = await cli(
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
        "C9",
        "--thread",
        "1700000000.000100",
      ],
      { stdin: "s" },
    );
    expect(add.code, add.stderr).toBe(0);
    const table = (await cli(["connections", "list"])).stdout.split("\n");
    expect(table[0]!.split(/\s+/)).toEqual([
      "ID",
      "TEAM",
      "OWNER",
      "SERVICE",
      "SCOPE",
      "THREAD",
      "STATUS",
      "EXPIRES",
      "LABEL",
    ]);
    expect(table[1]).toMatch(
      /^conn_\S+\s+T1\s+U2\s+svc\s+thread\s+C9\/1700000000\.000100\s+active\s+2026-11-30T11:00:00Z$/,
    );
    const [json] = (await cli(["connections", "list", "--json"])).stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(json).toMatchObject({
      scope: "thread",
      channelId: "C9",
      threadTs: "1700000000.000100",
      createdAt: "2026-11-30T10:00:00Z",
      expiresAt: "2026-11-30T11:00:00Z",
      endedAt: null,
    });
  });
});
