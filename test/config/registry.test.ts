import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/env.js";
import { ConfigError } from "../../src/config/errors.js";
import { FAIL_CLOSED_CLASS, loadRegistry, parseRegistry, toToolClass } from "../../src/config/registry.js";
import { resolveRegistry } from "../../src/config/registry-source.js";
import { registryDoc, TempDirs, writeRegistryFile } from "../support/foundation.js";

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

function jiraDoc(service: Record<string, unknown>): unknown {
  return {
    services: {
      jira: {
        transport: {
          type: "stdio",
          command: "npx",
          args: ["-y", "jira-mcp"],
          credentialEnv: { JIRA_API_TOKEN: "{{token}}" },
        },
        capture: { strategy: "paste" },
        ...service,
      },
    },
  };
}

describe("loadRegistry", () => {
  it("loads a valid file with defaults and TTLs in milliseconds", () => {
    const file = writeRegistryFile(tmp.make());
    const reg = loadRegistry(file);
    expect(reg.list().map((s) => s.name)).toEqual(["svc", "other"]);
    const svc = reg.get("svc")!;
    expect(svc.ttlMs).toBe(3_600_000);
    expect(svc.displayName).toBe("svc");
    expect(reg.get("other")!.entry.scopes).toEqual(["thread"]);
    expect(reg.get("other")!.ttlMs).toBe(7_200_000);
    expect(reg.get("nope")).toBeUndefined();
  });

  it("names the file and the path inside it for a malformed entry", () => {
    const file = path.join(tmp.make(), "services.json");
    const doc = jiraDoc({});
    (doc as { services: { jira: { transport: { command: string } } } }).services.jira.transport.command = "";
    writeFileSync(file, JSON.stringify(doc));
    const err = configError(() => loadRegistry(file));
    expect(err.code).toBe("invalid_registry");
    expect(err.message).toContain(`${file}: services.jira.transport.command:`);
  });

  it("names the file for invalid JSON", () => {
    const file = path.join(tmp.make(), "broken.json");
    writeFileSync(file, '{ "services": { ');
    const err = configError(() => loadRegistry(file));
    expect(err.code).toBe("invalid_registry");
    expect(err.message).toContain(file);
    expect(err.message).toMatch(/not valid JSON/);
  });

  it("names a missing file", () => {
    const file = path.join(tmp.make(), "absent.json");
    const err = configError(() => loadRegistry(file));
    expect(err.code).toBe("registry_not_found");
    expect(err.message).toContain(file);
    expect(err.message).toContain("SLAUDE_REGISTRY_PATH");
  });

  it("rejects unknown keys at every level (strict)", () => {
    const cases: [unknown, string][] = [
      [jiraDoc({ ttll: "8h" }), "services.jira"],
      [{ ...(jiraDoc({}) as object), extra: true }, "(root)"],
      [
        jiraDoc({ transport: { type: "stdio", command: "x", credentialEnv: { T: "{{token}}" }, shell: true } }),
        "services.jira.transport",
      ],
      [
        jiraDoc({ capture: { strategy: "paste", fields: [{ name: "token", label: "Token", secrett: true }] } }),
        "services.jira.capture.fields.0",
      ],
    ];
    for (const [doc, where] of cases) {
      const err = configError(() => parseRegistry(doc, "reg.json"));
      expect(err.message).toContain(`reg.json: ${where}: `);
      expect(err.message).toMatch(/[Uu]nrecognized key/);
    }
  });

  it("gives unclassified tools the fail-closed class", () => {
    const reg = parseRegistry(registryDoc(), "reg.json");
    const svc = reg.get("svc")!;
    expect(svc.classOf("unheard_of_tool")).toEqual({ access: "personal", write: true });
    expect(svc.classOf("unheard_of_tool")).toEqual(FAIL_CLOSED_CLASS);
    expect(svc.isClassified("unheard_of_tool")).toBe(false);
    expect(svc.classOf("read_thing")).toEqual({ access: "borrowable", write: false });
    expect(svc.isClassified("read_thing")).toBe(true);
    expect(svc.classOf("write_thing")).toEqual({ access: "borrowable", write: true });
    // An explicit defaultToolClass applies to unlisted tools.
    const lenient = parseRegistry(jiraDoc({ defaultToolClass: ["read"] }), "reg.json").get("jira")!;
    expect(lenient.classOf("anything")).toEqual({ access: "own_or_shared", write: false });
  });

  it("maps class words to access and write", () => {
    expect(toToolClass(["personal", "read"])).toEqual({ access: "personal", write: false });
    expect(toToolClass(["borrowable", "write"])).toEqual({ access: "borrowable", write: true });
    expect(toToolClass(["write"])).toEqual({ access: "own_or_shared", write: true });
  });

  it("rejects a class with both read and write, neither, or personal and borrowable", () => {
    const bad: [unknown[], RegExp][] = [
      [["read", "write"], /exactly one of "read" or "write"/],
      [["borrowable"], /exactly one of "read" or "write"/],
      [["personal", "borrowable", "read"], /both "personal" and "borrowable"/],
      [["read", "read"], /twice/],
      [[], /./],
      [["admin", "read"], /./],
    ];
    for (const [words, message] of bad) {
      const err = configError(() => parseRegistry(jiraDoc({ tools: { create_issue: words } }), "reg.json"));
      expect(err.message).toContain("reg.json: services.jira.tools.create_issue");
      expect(err.message).toMatch(message);
    }
    expect(
      configError(() => parseRegistry(jiraDoc({ defaultToolClass: ["read", "write"] }), "reg.json")).message,
    ).toContain("services.jira.defaultToolClass");
  });

  it("rejects bad service names, TTLs, scopes, templates and transports", () => {
    const err = (doc: unknown) => configError(() => parseRegistry(doc, "reg.json")).message;
    expect(err({ services: { Jira: (jiraDoc({}) as { services: { jira: unknown } }).services.jira } })).toContain(
      "services.Jira",
    );
    expect(err(jiraDoc({ ttl: "forever" }))).toContain("services.jira.ttl");
    expect(err(jiraDoc({ ttl: 0 }))).toContain("services.jira.ttl");
    expect(err(jiraDoc({ scopes: ["team"] }))).toContain("services.jira.scopes.0");
    expect(err(jiraDoc({ scopes: [] }))).toContain("services.jira.scopes");
    expect(err(jiraDoc({ transport: { type: "stdio", command: "x", credentialEnv: { T: "plain text" } } }))).toContain(
      "services.jira.transport.credentialEnv.T",
    );
    expect(err(jiraDoc({ transport: { type: "stdio", command: "x", credentialEnv: {} } }))).toContain(
      "services.jira.transport.credentialEnv",
    );
    expect(err(jiraDoc({ transport: { type: "http", url: "ftp://example.com/mcp" } }))).toContain(
      "services.jira.transport.url",
    );
    expect(err(jiraDoc({ capture: { strategy: "oauth" } }))).toContain("services.jira.capture");
    expect(err({})).toContain("reg.json: services:");
  });

  it("fills http transport and capture defaults", () => {
    const reg = parseRegistry(
      jiraDoc({
        transport: { type: "http", url: "https://mcp.example.com/mcp" },
        capture: { strategy: "oauth", discovery: true },
      }),
      "reg.json",
    );
    const entry = reg.get("jira")!.entry;
    expect(entry.transport).toEqual({
      type: "http",
      url: "https://mcp.example.com/mcp",
      protocol: "auto",
      credentialHeader: { name: "Authorization", value: "Bearer {{access_token}}" },
    });
    expect(entry.ttl).toBe("8h");
    expect(reg.get("jira")!.ttlMs).toBe(8 * 3_600_000);
  });
});

describe("resolveRegistry", () => {
  // Development without services.json runs the demo registry instead: test/demo/dev-start.test.ts.
  it("uses SLAUDE_REGISTRY_PATH, then ./services.json, else an empty registry in a test start", () => {
    const dir = tmp.make();
    const explicit = writeRegistryFile(tmp.make());
    expect(resolveRegistry(loadConfig({ SLAUDE_REGISTRY_PATH: explicit }), dir)).toMatchObject({ path: explicit });

    const none = resolveRegistry(loadConfig({ NODE_ENV: "test" }), dir);
    expect(none.path).toBeUndefined();
    expect(none.registry.list()).toEqual([]);
    expect(none.note).toContain(path.join(dir, "services.json"));

    const fallback = writeRegistryFile(dir);
    const found = resolveRegistry(loadConfig({}), dir);
    expect(found.path).toBe(fallback);
    expect(found.registry.get("svc")).toBeDefined();
  });

  it("refuses production without a registry", () => {
    const dir = tmp.make();
    const err = configError(() => resolveRegistry({ ...loadConfig({}), production: true }, dir));
    expect(err.code).toBe("registry_not_found");
    expect(err.message).toContain("SLAUDE_REGISTRY_PATH");
  });
});
