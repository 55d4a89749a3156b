// The real package: `npm pack` (which runs the package's own `prepare` build), install the tarball
// into a fresh project offline, and run the command from PATH through npm's symlinked bin, then
// import the library by package name. Offline on purpose: every dependency comes from the npm
// cache, pinned by a lockfile derived from ours, and better-sqlite3's own install script finds a
// local prebuild (made from the compiled module already installed here) instead of compiling.
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newKeyB64, TempDirs } from "../support/foundation.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const PKG = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  bin: Record<string, string>;
};
const tmp = new TempDirs();
afterAll(() => tmp.cleanup());

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `cmd` (looked up on env.PATH, no shell) and collects its output; killed after `timeoutMs`. */
function run(
  cmd: string,
  args: readonly string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ["ignore", "pipe", "pipe"], shell: false });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The lockfile of a project whose only dependency is the tarball: our lock's runtime entries, unchanged. */
function consumerLock(tarball: string, integrity: string): unknown {
  const ours = JSON.parse(readFileSync(path.join(ROOT, "package-lock.json"), "utf8")) as {
    packages: Record<string, Record<string, unknown>>;
  };
  const packages: Record<string, unknown> = {
    "": { name: "consumer", version: "1.0.0", dependencies: { [PKG.name]: `file:${tarball}` } },
    [`node_modules/${PKG.name}`]: {
      version: PKG.version,
      resolved: `file:${tarball}`,
      integrity,
      dependencies: PKG.dependencies,
      bin: PKG.bin,
    },
  };
  for (const [key, entry] of Object.entries(ours.packages)) {
    if (key === "" || entry.dev === true || entry.link === true) continue;
    // Our lock omits `resolved`; the registry's conventional tarball URL lets npm find each one in
    // its cache by integrity instead of fetching metadata it does not have offline.
    const name = key.slice(key.lastIndexOf("node_modules/") + "node_modules/".length);
    const resolved =
      entry.resolved ?? `https://registry.npmjs.org/${name}/-/${name.split("/").pop()}-${String(entry.version)}.tgz`;
    packages[key] = { ...entry, resolved };
  }
  return { name: "consumer", version: "1.0.0", lockfileVersion: 3, requires: true, packages };
}

/** A prebuild tarball in prebuild-install's naming, holding the better-sqlite3 module compiled for this Node. */
function localPrebuild(dir: string): string {
  const bs = JSON.parse(readFileSync(path.join(ROOT, "node_modules/better-sqlite3/package.json"), "utf8")) as {
    version: string;
  };
  const stage = path.join(dir, "stage");
  mkdirSync(path.join(stage, "build/Release"), { recursive: true });
  copyFileSync(
    path.join(ROOT, "node_modules/better-sqlite3/build/Release/better_sqlite3.node"),
    path.join(stage, "build/Release/better_sqlite3.node"),
  );
  const out = path.join(dir, "prebuilds");
  mkdirSync(out);
  const name = `better-sqlite3-v${bs.version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  execFileSync("tar", ["-czf", path.join(out, name), "-C", stage, "build"]);
  return out;
}

describe("the packed package", () => {
  let project = "";
  let files: string[] = [];
  const timings: Record<string, number> = {};
  const env = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
    PATH: `${path.join(project, "node_modules/.bin")}:${process.env.PATH ?? ""}`,
    HOME: process.env.HOME,
    ...extra,
  });

  beforeAll(async () => {
    const dir = tmp.make("slaude-pack-");
    let t = Date.now();
    // `npm pack` runs `prepare` (the TypeScript build) first, as `npm ci` does in a checkout.
    const packed = await run("npm", ["pack", "--json", "--pack-destination", dir], {
      cwd: ROOT,
      env: process.env,
      timeoutMs: 120_000,
    });
    expect(packed.code, packed.stderr).toBe(0);
    timings.pack = Date.now() - t;
    process.stdout.write(`npm pack (with the prepare build): ${timings.pack} ms\n`);
    const info = (
      JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as {
        filename: string;
        integrity: string;
        files: { path: string }[];
      }[]
    )[0]!;
    files = info.files.map((f) => f.path);

    project = path.join(dir, "consumer");
    mkdirSync(project);
    copyFileSync(path.join(dir, info.filename), path.join(project, info.filename));
    writeFileSync(
      path.join(project, "package.json"),
      JSON.stringify({
        name: "consumer",
        version: "1.0.0",
        private: true,
        type: "module",
        dependencies: { [PKG.name]: `file:${info.filename}` },
        allowScripts: { "better-sqlite3": true },
      }),
    );
    writeFileSync(path.join(project, "package-lock.json"), JSON.stringify(consumerLock(info.filename, info.integrity)));
    t = Date.now();
    const installed = await run("npm", ["ci", "--offline", "--no-audit", "--no-fund", "--foreground-scripts"], {
      cwd: project,
      env: { ...process.env, npm_config_better_sqlite3_local_prebuilds: localPrebuild(dir) },
      timeoutMs: 120_000,
    });
    expect(installed.code, installed.stdout + installed.stderr).toBe(0);
    // Built from source would have gone through node-gyp: the prebuild must have been used.
    expect(installed.stdout + installed.stderr).not.toMatch(/gyp info/);
    timings.install = Date.now() - t;
  }, 240_000);

  it("ships the runtime (compiled code, migrations, schema, manifests) and no tests, bench, CI or sources", () => {
    for (const f of [
      "bin/slaude-connect.js",
      "dist/cli/main.js",
      "dist/index.js",
      "dist/index.d.ts",
      "migrations/0001_init.sql",
      "schema/service-registry.schema.json",
      "slack/manifest.yaml",
      "static/login/live-view.html",
      "static/login/live-view.js",
      "static/login/live-view.css",
      "package.json",
      "README.md",
    ]) {
      expect(files, f).toContain(f);
    }
    expect(
      files.filter(
        (f) => /^(test|bench|\.ci|src|node_modules|data)\//.test(f) || /\.test\.|tsconfig|tsbuildinfo|vitest/.test(f),
      ),
    ).toEqual([]);
    expect(lstatSync(path.join(project, "node_modules/.bin/slaude-connect")).isSymbolicLink()).toBe(true);
  });

  it("finds the live-view page's static files from the compiled code", async () => {
    const page = path.join(project, "node_modules", PKG.name, "dist/login/live-view-page.js");
    const script = `const m = await import(${JSON.stringify(pathToFileURL(page).href)}); const a = new m.LiveViewAssets(); console.log(a.asset("live-view.js") && a.asset("live-view.css") && a.page({ sessionId: "s", serviceName: "x", nonce: "n" }).includes("live-view.js") ? "ok" : "missing");`;
    const r = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: project, env: env() });
    expect(r, r.stderr).toMatchObject({ code: 0, stdout: "ok\n" });
  });

  it("runs from PATH through npm's symlinked bin: --version, doctor, connections list", async () => {
    const work = tmp.make("slaude-pack-run-");
    const appEnv = env({
      SLAUDE_DATA_DIR: path.join(work, "data"),
      SLAUDE_ENCRYPTION_KEY: newKeyB64(),
      SLAUDE_CHROMIUM_PATH: path.join(work, "no-chromium"),
    });

    const version = await run("slaude-connect", ["--version"], { cwd: work, env: appEnv });
    expect(version).toMatchObject({ code: 0, stdout: `${PKG.version}\n`, stderr: "" });

    const doctor = await run("slaude-connect", ["doctor"], { cwd: work, env: appEnv });
    expect(doctor.stderr).toBe("");
    expect(doctor.stdout).toMatch(/^ok {4}encryption key: /m);
    expect(doctor.stdout).toMatch(/^WARN {2}database: .* does not exist yet/m);
    expect(doctor.stdout).toMatch(/ warning\(s\)$/m);

    // Migrations are read relative to the installed compiled code, not the working directory.
    const migrate = await run("slaude-connect", ["migrate"], { cwd: work, env: appEnv });
    expect(migrate.code, migrate.stderr).toBe(0);
    // Every migration the package ships, found relative to the compiled code, not the checkout's.
    const versions = readdirSync(path.join(ROOT, "migrations"))
      .filter((f) => /^\d{4}_.*\.sql$/.test(f))
      .map((f) => Number(f.slice(0, 4)))
      .sort((x, y) => x - y);
    expect(migrate.stdout).toContain(`applied ${versions.join(", ")}; schema is at ${versions.at(-1)}\n`);

    const list = await run("slaude-connect", ["connections", "list"], { cwd: work, env: appEnv });
    expect(list).toMatchObject({ code: 0, stdout: "(none)\n", stderr: "" });
  });

  it("runs through npx in the project that installed it", async () => {
    // npx finds the project's own node_modules/.bin link; --no-install: never the registry.
    const r = await run("npx", ["--no-install", "slaude-connect", "--version"], {
      cwd: project,
      env: { ...process.env, npm_config_offline: "true" },
    });
    expect(r).toMatchObject({ code: 0, stdout: `${PKG.version}\n` });
  });

  it("is importable by package name with types for the documented library API", async () => {
    writeFileSync(
      path.join(project, "use.mjs"),
      `import * as lib from "slaude-connect";\nconsole.log(JSON.stringify(Object.keys(lib).sort()));\n`,
    );
    const r = await run(process.execPath, ["use.mjs"], { cwd: project, env: env() });
    expect(r.code, r.stderr).toBe(0);
    const names = JSON.parse(r.stdout) as string[];
    for (const n of [
      "startApp",
      "loadConfig",
      "Broker",
      "StaticMembership",
      "CachedMembership",
      "noMembership",
      "noApprovalChannel",
      "VERSION",
    ])
      expect(names).toContain(n);
    // The types resolve through `exports` the way a TypeScript consumer (nodenext) resolves them.
    writeFileSync(
      path.join(project, "use.ts"),
      [
        `import { loadConfig, startApp, StaticMembership, noApprovalChannel, type ApprovalChannel, type AppOptions, type EmbeddedCaller, type MembershipSource } from "slaude-connect";`,
        `const membership: MembershipSource = new StaticMembership().add("T1", "C1", "U1");`,
        `const approvalChannel: ApprovalChannel = noApprovalChannel;`,
        `const caller: EmbeddedCaller = { teamId: "T1", channelId: "C1", threadTs: "1.1", userId: "U1" };`,
        `const opts: AppOptions = { config: loadConfig({}), membership, approvalChannel };`,
        `export const start: () => Promise<unknown> = async () => (await startApp(opts)).broker.connectEmbedded(() => caller);`,
        // A misuse must be a type error, or the types would be `any`.
        `// @ts-expect-error membership is a MembershipSource, not a string`,
        `export const bad: AppOptions = { config: loadConfig({}), membership: "nobody" };`,
      ].join("\n"),
    );
    writeFileSync(
      path.join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "ES2022",
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ["node"],
          typeRoots: [path.join(ROOT, "node_modules/@types")],
        },
        files: ["use.ts"],
      }),
    );
    const tsc = await run(
      process.execPath,
      [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"],
      { cwd: project, env: env(), timeoutMs: 120_000 },
    );
    expect(tsc.code, tsc.stdout + tsc.stderr).toBe(0);
    expect(existsSync(path.join(project, "node_modules/tsx"))).toBe(false);
    process.stdout.write(`package test timings: pack ${timings.pack} ms, offline install ${timings.install} ms\n`);
  });
});
