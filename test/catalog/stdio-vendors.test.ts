// The stdio entries of services.example.json, proven against the real, pinned npm packages: each is
// parsed by the broker's own registry parser from the catalog file, started by the broker's own
// launcher (allowlisted env, private HOME, credential template) against a fake API on loopback, one
// read tool is called to prove the credential reaches the API, and every tool the entry names must
// be in the server's real tools/list (a misspelt name would silently run as personal write).
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { inspectionLauncher } from "../../src/app/launcher.js";
import { systemClock } from "../../src/clock/clock.js";
import { loadConfig } from "../../src/config/env.js";
import { loadRegistry, parseRegistry, type Service } from "../../src/config/registry.js";
import { compareTools, type VendorTool } from "../../src/config/tool-inspection.js";
import { memoryLogger } from "../../src/log/logger.js";
import { renderCredential } from "../../src/pool/credential-template.js";
import { inspectionConnection, readToolList } from "../../src/pool/inspect.js";
import { startFakeGitlab } from "../fixtures/fake-gitlab-api.js";
import { startFakeJira } from "../fixtures/fake-jira-api.js";
import { startFakeNotion } from "../fixtures/fake-notion-api.js";
import { TempDirs } from "../support/foundation.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CATALOG = path.join(ROOT, "services.example.json");
const catalogDoc = JSON.parse(readFileSync(CATALOG, "utf8")) as { services: Record<string, Record<string, unknown>> };
const devDependencies = (
  JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { devDependencies: Record<string, string> }
).devDependencies;

/** How to run one stdio catalog entry against its fake. */
interface StdioCase {
  readonly pkg: string;
  /** Starts the fake API; `env` points the vendor at it (replacing the entry's public API URL). */
  startFake(
    token: string,
    fields: Record<string, string>,
  ): Promise<{ env: Record<string, string>; tokensSeen(): (string | undefined)[]; close(): Promise<void> }>;
  readonly readTool: { readonly name: string; readonly args: Record<string, unknown>; readonly expect: RegExp };
  /** Tools the entry classifies read although the vendor annotates them as writes (checked, so the list stays honest). */
  readonly readDespiteAnnotations: readonly string[];
  /** The credential's other fields beside `token` (a two-field paste). */
  readonly fields?: Record<string, string>;
}

const CASES: Record<string, StdioCase> = {
  gitlab: {
    pkg: "@modelcontextprotocol/server-gitlab",
    async startFake(token) {
      const f = await startFakeGitlab({ tokens: { [token]: "catalog-user" } });
      return {
        env: { GITLAB_API_URL: f.apiUrl },
        tokensSeen: () => f.requests.map((r) => r.token),
        close: () => f.close(),
      };
    },
    readTool: { name: "search_repositories", args: { search: "widgets" }, expect: /acme\/widgets/ },
    readDespiteAnnotations: [],
  },
  notion: {
    pkg: "@notionhq/notion-mcp-server",
    async startFake(token) {
      const f = await startFakeNotion({ [token]: "Catalog bot" });
      return { env: { BASE_URL: f.baseUrl }, tokensSeen: () => f.requests.map((r) => r.token), close: () => f.close() };
    },
    readTool: { name: "API-get-self", args: {}, expect: /"name":"Catalog bot"/ },
    // POST endpoints that only read; notion-mcp-server annotates every non-GET as destructive.
    readDespiteAnnotations: ["API-post-search", "API-query-data-source"],
  },
  jira: {
    pkg: "@aaronsb/jira-cloud-mcp",
    fields: { email: "catalog@example.com" },
    async startFake(token, fields) {
      const f = await startFakeJira({
        [fields.email!]: { token, accountId: "acc-catalog", displayName: "Catalog user" },
      });
      return {
        env: { JIRA_HOST: f.host },
        tokensSeen: () => f.requests.map((r) => (r.accountId ? token : undefined)),
        close: () => f.close(),
      };
    },
    readTool: { name: "manage_jira_project", args: { operation: "list" }, expect: /DEMO/ },
    readDespiteAnnotations: [],
  },
};

/** The installed package's version and the absolute path of its bin called `command`. */
function installed(pkg: string, command: string): { version: string; bin: string | undefined } {
  const dir = path.join(ROOT, "node_modules", pkg);
  const meta = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as {
    version: string;
    bin?: string | Record<string, string>;
  };
  const rel = typeof meta.bin === "string" ? meta.bin : meta.bin?.[command];
  return { version: meta.version, bin: rel === undefined ? undefined : path.join(dir, rel) };
}

/** The problems of a catalog entry against the tools its vendor really offers (empty when it is right). */
function entryProblems(
  service: Service,
  offered: readonly VendorTool[],
  readDespiteAnnotations: readonly string[],
): string[] {
  const problems = compareTools(Object.keys(service.entry.tools), offered).missing.map(
    (t) => `classifies "${t}", which the vendor does not offer`,
  );
  for (const tool of offered) {
    const cls = service.isClassified(tool.name) ? service.classOf(tool.name) : undefined;
    const annotatedWrite = tool.annotations?.readOnlyHint === false || tool.annotations?.destructiveHint === true;
    if (cls && !cls.write && annotatedWrite && !readDespiteAnnotations.includes(tool.name))
      problems.push(`classifies "${tool.name}" read, but the vendor annotates it as a write`);
  }
  for (const t of readDespiteAnnotations)
    if (service.classOf(t).write)
      problems.push(`"${t}" is listed as read despite its annotations but is not classified read`);
  return problems;
}

const tmp = new TempDirs();
afterAll(() => tmp.cleanup());

describe("services.example.json: stdio entries against the real packages", () => {
  const catalog = loadRegistry(CATALOG);
  const stdio = catalog.list().filter((s) => s.entry.transport.type === "stdio");
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("every stdio entry of the catalog has a verification case here", () => {
    expect(stdio.map((s) => s.name).sort()).toEqual(Object.keys(CASES).sort());
  });

  for (const [name, c] of Object.entries(CASES)) {
    it(`${name}: pinned ${c.pkg} runs with the entry's credential and offers every tool the entry names`, async () => {
      const service = catalog.get(name);
      if (service?.entry.transport.type !== "stdio") throw new Error(`the catalog has no stdio entry "${name}"`);
      const transport = service.entry.transport;

      // The entry runs the package's own bin, at the version pinned (exactly) in devDependencies.
      const pkg = installed(c.pkg, transport.command);
      expect(devDependencies[c.pkg], `${c.pkg} must be an exact devDependency`).toBe(pkg.version);
      expect(service.entry.description).toContain(`${c.pkg}@${pkg.version}`);
      if (!pkg.bin) throw new Error(`${c.pkg} has no bin called "${transport.command}" (the entry's command)`);

      // Same entry, same credential template; only the executable path and the API URL differ.
      const token = `catalog-${randomBytes(12).toString("hex")}`;
      const fake = await c.startFake(token, c.fields ?? {});
      cleanups.push(() => fake.close());
      const raw = structuredClone(catalogDoc.services[name]!) as { transport: Record<string, unknown> };
      raw.transport = {
        ...raw.transport,
        command: process.execPath,
        args: [pkg.bin],
        env: { ...transport.env, ...fake.env },
      };
      const runnable = parseRegistry({ services: { [name]: raw } }, `${CATALOG} (${name}, test run)`).get(name)!;

      const config = loadConfig({ SLAUDE_DATA_DIR: tmp.make("slaude-catalog-"), PATH: process.env.PATH });
      const launcher = inspectionLauncher(config, systemClock, memoryLogger("warn"));
      const handle = await launcher.launch(
        inspectionConnection(runnable, Date.now()),
        runnable,
        renderCredential(runnable, { kind: "fields", fields: { ...c.fields, token } }),
      );
      cleanups.push(() => handle.kill());

      const offered = await readToolList(handle.client);
      expect(offered.length).toBeGreaterThan(0);
      expect(entryProblems(service, offered, c.readDespiteAnnotations)).toEqual([]);

      const res = await handle.client.callTool({ name: c.readTool.name, arguments: c.readTool.args });
      const text = (res.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("\n");
      expect(res.isError ?? false, text).toBe(false);
      expect(text).toMatch(c.readTool.expect);
      // The API saw this connection's token and nothing else.
      expect(fake.tokensSeen().length).toBeGreaterThan(0);
      expect(new Set(fake.tokensSeen())).toEqual(new Set([token]));
      await handle.close();

      // The check above can fail: one misspelt tool name in the entry is caught.
      const misspelt = structuredClone(catalogDoc.services[name]!) as { tools: Record<string, unknown> };
      const [first, cls] = Object.entries(misspelt.tools)[0]!;
      misspelt.tools[`${first}_typo`] = cls;
      const wrong = parseRegistry({ services: { [name]: misspelt } }, "misspelt").get(name)!;
      expect(entryProblems(wrong, offered, c.readDespiteAnnotations)).toEqual([
        `classifies "${first}_typo", which the vendor does not offer`,
      ]);
    });
  }
});
