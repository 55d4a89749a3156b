// `registry inspect` and `registry check --inspect`, run as the real CLI process against the fixture
// vendors, the real @modelcontextprotocol/server-gitlab and @notionhq/notion-mcp-server, and the
// catalog file itself.
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { parseRegistry } from "../../src/config/registry.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { SERVER_GITLAB_BIN, VENDOR_STDIO_PATH } from "../fixtures/paths.js";
import { type RemoteVendor, startRemoteVendor } from "../fixtures/remote-vendor.js";
import { newKeyB64, TempDirs, writeRegistryFile } from "../support/foundation.js";
import { runBin, runInProcess } from "./run.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CATALOG = path.join(ROOT, "services.example.json");
// Children run in a private HOME, so the loader must be an absolute URL, not a bare "tsx".
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const GITLAB_TOOLS = [
  "create_branch",
  "create_issue",
  "create_merge_request",
  "create_or_update_file",
  "create_repository",
  "fork_repository",
  "get_file_contents",
  "push_files",
  "search_repositories",
];

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());
let remote: RemoteVendor | undefined;
afterAll(() => remote?.close());

const paste = { strategy: "paste", fields: [{ name: "token", label: "Token" }] };

function registry(url: string) {
  return {
    services: {
      vendor: {
        transport: {
          type: "stdio",
          command: process.execPath,
          args: ["--import", TSX_LOADER, VENDOR_STDIO_PATH],
          credentialEnv: { VENDOR_TOKEN: "{{token}}" },
        },
        capture: paste,
        scopes: ["thread", "user", "shared"],
        tools: { read_item: ["borrowable", "read"], read_itme: ["borrowable", "read"] },
      },
      gitlab: {
        transport: {
          type: "stdio",
          command: process.execPath,
          args: [SERVER_GITLAB_BIN],
          env: { GITLAB_API_URL: "http://127.0.0.1:9/api/v4" },
          credentialEnv: { GITLAB_PERSONAL_ACCESS_TOKEN: "{{token}}" },
        },
        capture: paste,
        scopes: ["shared"],
        tools: {
          search_repositories: ["borrowable", "read"],
          get_file_contents: ["borrowable", "read"],
          search_repository: ["borrowable", "read"],
        },
      },
      remote: {
        transport: {
          type: "http",
          url,
          protocol: "streamable-http",
          credentialHeader: { name: "Authorization", value: "Bearer {{token}}" },
        },
        capture: paste,
        scopes: ["shared"],
      },
    },
  };
}

async function setup() {
  remote ??= await startRemoteVendor({ tokens: { "remote-good-token-5521": "remote-user" } });
  const dir = tmp.make();
  const env: NodeJS.ProcessEnv = {
    SLAUDE_DATA_DIR: path.join(dir, "data"),
    SLAUDE_REGISTRY_PATH: writeRegistryFile(dir, registry(remote.url)),
    SLAUDE_ENCRYPTION_KEY: newKeyB64(),
    USER: "tester",
  };
  const opts = (stdin?: string) => (stdin === undefined ? {} : { stdin });
  // `cli` is the real process; `quick` runs in-process, for set-up and refusals that start no vendor.
  return {
    dir,
    env,
    remote,
    cli: (args: string[], stdin?: string) => runBin(args, env, opts(stdin)),
    quick: (args: string[], stdin?: string) => runInProcess(args, env, opts(stdin)),
  };
}

/** The pasted `"tools": {...}` block at the end of inspect's output, parsed. */
function toolsBlock(stdout: string): Record<string, string[]> {
  const at = stdout.lastIndexOf('"tools": {');
  expect(at, stdout).toBeGreaterThanOrEqual(0);
  return (JSON.parse(`{${stdout.slice(at)}}`) as { tools: Record<string, string[]> }).tools;
}

describe("registry inspect", () => {
  it("lists the vendor's tools with the class their annotations suggest and prints a block that pastes into the registry", async () => {
    const { cli, env } = await setup();
    const token = `canary-${randomBytes(12).toString("hex")}`;
    const r = await cli(["registry", "inspect", "vendor"], token);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^vendor: the vendor offers \d+ tool\(s\)$/m);
    expect(r.stdout).toMatch(/^read_item\s+borrowable read\s+borrowable read\s+readOnlyHint$/m);
    expect(r.stdout).toMatch(/^write_item\s+borrowable write\s+-\s+destructiveHint$/m);
    expect(r.stdout).toMatch(/^echo\s+borrowable write\s+-\s+no annotations: review$/m);
    expect(r.stdout).toContain('warning: the registry classifies "read_itme", which the vendor does not offer');
    const block = toolsBlock(r.stdout);
    expect(block).toMatchObject({
      read_item: ["borrowable", "read"],
      write_item: ["borrowable", "write"],
      echo: ["borrowable", "write"],
    });
    // The block is valid registry input as printed.
    const doc = registry("http://127.0.0.1:9/mcp");
    const pasted = parseRegistry({ services: { vendor: { ...doc.services.vendor, tools: block } } }, "pasted").get(
      "vendor",
    )!;
    expect(pasted.classOf("write_item")).toEqual({ access: "borrowable", write: true });
    // The credential is never printed, and the vendor's private HOME is gone afterwards.
    expect(r.stdout + r.stderr).not.toContain(token);
    expect(readdirSync(path.join(env.SLAUDE_DATA_DIR!, "run", "inspect"))).toEqual([]);
  });

  it("starts the real server-gitlab and lists its nine tools", async () => {
    const { cli } = await setup();
    const r = await cli(["registry", "inspect", "gitlab"], "glpat-inspect-test");
    expect(r.code, r.stderr).toBe(0);
    expect(Object.keys(toolsBlock(r.stdout)).sort()).toEqual(GITLAB_TOOLS);
    expect(r.stdout).toContain('warning: the registry classifies "search_repository", which the vendor does not offer');
  });

  it("reaches a remote vendor with the credential from stdin or a stored connection (audited); a wrong one fails", async () => {
    const { cli, quick, env, remote } = await setup();
    const good = await cli(["registry", "inspect", "remote"], "remote-good-token-5521");
    expect(good.code, good.stderr).toBe(0);
    expect(toolsBlock(good.stdout)).toEqual({
      echo: ["borrowable", "write"],
      whoami: ["personal", "read"],
      write_note: ["borrowable", "write"],
    });
    expect(good.stdout).toMatch(/^whoami\s+personal read\s+-\s+readOnlyHint, about the caller's own account$/m);
    expect(remote.requests.some((q) => q.authorization === "Bearer remote-good-token-5521")).toBe(true);

    const bad = await cli(["registry", "inspect", "remote"], "remote-bad-token");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error: remote rejected the stored credential \(http_401\)/m);
    expect(bad.stdout + bad.stderr).not.toContain("remote-bad-token");

    const added = await quick(
      ["connections", "add", "--team", "T1", "--service", "remote", "--scope", "shared"],
      "remote-good-token-5521",
    );
    const id = /^stored (conn_\S+) /.exec(added.stdout)?.[1];
    expect(id, added.stderr).toBeDefined();
    const stored = await cli(["registry", "inspect", "remote", "--connection", id!]);
    expect(stored.code, stored.stderr).toBe(0);
    expect(Object.keys(toolsBlock(stored.stdout)).sort()).toEqual(["echo", "whoami", "write_note"]);
    const { store } = openSqliteStore(path.join(env.SLAUDE_DATA_DIR!, "slaude.db"));
    try {
      const rows = await store.audit.query({ event: "admin_action", connectionId: id! });
      expect(rows).toMatchObject([{ decision: "registry_inspect", service: "remote", actor: "cli:tester" }]);
    } finally {
      await store.close();
    }
    const wrongService = await quick(["registry", "inspect", "vendor", "--connection", id!]);
    expect(wrongService.code).toBe(1);
    expect(wrongService.stderr).toContain(`connection ${id} is for remote, not vendor`);
  });

  it("refuses usage mistakes, unknown services and an empty standard input", async () => {
    const { quick: cli } = await setup();
    expect((await cli(["registry", "inspect"])).code).toBe(2);
    expect((await cli(["registry", "inspect", "vendor", "--port", "1"])).code).toBe(2);
    const unknown = await cli(["registry", "inspect", "nope"], "x");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/unknown service "nope" in .*services\.json \(known: vendor, gitlab, remote\)/);
    const empty = await cli(["registry", "inspect", "vendor"]);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain("no credential on standard input");
    expect((await cli(["registry", "inspect", "vendor", "--connection", "conn_nope"])).stderr).toContain(
      "no connection conn_nope",
    );
  });
});

describe("registry check --inspect", () => {
  /** PATH with the pinned packages' bins, as an operator's `npm install -g` would give the children. */
  const withBins = () => ({ PATH: `${path.join(ROOT, "node_modules", ".bin")}:${process.env.PATH ?? ""}` });

  it("passes the catalog's own gitlab and notion entries against the real packages", async () => {
    const { env } = await setup();
    for (const [service, token] of [
      ["gitlab", "glpat-catalog-check"],
      ["notion", "ntn_catalog_check"],
    ] as const) {
      const r = await runBin(
        ["registry", "check", CATALOG, "--inspect", "--service", service],
        { ...env, ...withBins() },
        { stdin: token },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(`${CATALOG}: ok`);
      expect(r.stdout).toMatch(new RegExp(`^${service}: the vendor offers \\d+ tool\\(s\\)$`, "m"));
      // Every tool both packages offer is classified in the catalog.
      expect(r.stdout).not.toContain("warning:");
    }
  });

  it("warns about tools the entry does not classify and fails on a tool the vendor lacks", async () => {
    const { dir, env } = await setup();
    const doc = JSON.parse(readFileSync(CATALOG, "utf8")) as {
      services: Record<string, { tools: Record<string, unknown> }>;
    };
    const gitlab = doc.services.gitlab!;
    delete gitlab.tools.push_files;
    gitlab.tools.get_file_content = gitlab.tools.get_file_contents;
    delete gitlab.tools.get_file_contents;
    const file = path.join(dir, "misspelt.json");
    writeFileSync(file, JSON.stringify(doc));
    const r = await runBin(
      ["registry", "check", file, "--inspect", "--service", "gitlab"],
      { ...env, ...withBins() },
      { stdin: "glpat-catalog-check" },
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      'warning: gitlab: the vendor offers "push_files", which the entry does not classify (it runs as the default class, personal write)',
    );
    expect(r.stdout).toContain(
      'warning: gitlab: the vendor offers "get_file_contents", which the entry does not classify',
    );
    expect(r.stdout).toContain(
      'warning: gitlab: the entry classifies "get_file_content", which the vendor does not offer (misspelt or removed?)',
    );
    expect(r.stderr).toContain(`${file}: gitlab names 1 tool(s) the vendor lacks`);

    const noService = await runInProcess(["registry", "check", CATALOG, "--inspect"], env, { stdin: "x" });
    expect(noService.code).toBe(2);
    expect(noService.stderr).toContain("say which service");
    expect((await runInProcess(["registry", "check", CATALOG, "--service", "gitlab"], env)).code).toBe(2);
  });
});
