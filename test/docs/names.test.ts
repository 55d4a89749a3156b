import { readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { EVENT_KINDS } from "../../src/cli/commands/audit.js";
import { EVENT_TYPES } from "../../src/events/broker-event.js";
import { DOCS, FILE_VARIANTS, ROOT, read, schemaVariables } from "./sources.js";

// Docs name what the code knows, and only that: every audit kind, event kind, CLI command and
// environment variable the code has appears where the docs list them, and no doc names one the code
// lacks. Each list is derived from the code's own source of truth (the CLI's audit kinds, which
// `satisfies` the AuditEventKind union; src/events/broker-event.ts's EVENT_TYPES; the CLI's command
// switch and each command's own dispatch; envSchema in src/config/env-schema.ts), never from a copy here.
// Each failure names the missing or unknown name and the doc.

const sorted = (xs: Iterable<string>): string[] => [...new Set(xs)].sort();

/** The keys of `envSchema` in src/config/env-schema.ts, and the `_FILE` variants of the secret ones. */
function envVariables(): Set<string> {
  const names = schemaVariables();
  expect(names.size, "envSchema not found in src/config/env-schema.ts").toBeGreaterThan(30);
  return new Set([...names, ...FILE_VARIANTS]);
}

/** Top-level CLI commands (the cases of runCli's switch that call a command) and each one's subcommands (its own dispatch). */
function cliCommands(): Map<string, Set<string>> {
  const main = read("src/cli/main.ts");
  const body = main.slice(
    main.indexOf("switch (command) {"),
    main.indexOf("default:", main.indexOf("switch (command) {")),
  );
  // Every `…Command` an import names, whatever order the formatter sorted its names in.
  const files = new Map(
    [...main.matchAll(/import \{([^}]*)\} from "\.\/commands\/([\w-]+)\.js"/g)].flatMap((m) =>
      [...m[1]!.matchAll(/\b(\w+Command)\b/g)].map((c) => [c[1]!, m[2]!] as const),
    ),
  );
  const commands = new Map<string, Set<string>>();
  for (const m of body.matchAll(
    /case "([a-z][a-z-]*)":\s*(?:\/\/[^\n]*\n\s*)*(?:noArguments\([^)]*\);\s*)?return await \(?(?:await import\("\.\/commands\/([\w-]+)\.js"\)\)\.)?(\w+Command)/g,
  )) {
    const file = m[2] ?? files.get(m[3]!);
    expect(file, `no command file for "${m[1]}" in src/cli/main.ts`).toBeDefined();
    const src = read(`src/cli/commands/${file}.ts`);
    // A command run through noArguments takes none: its file's other switches are not subcommands.
    commands.set(
      m[1]!,
      m[0].includes("noArguments(")
        ? new Set()
        : new Set([...src.matchAll(/(?:case |sub === )"([a-z][a-z-]*)"/g)].map((s) => s[1]!)),
    );
  }
  return commands;
}

/** The text of every fenced code block and inline code span of `doc`. */
function codeOf(doc: string): { blocks: string[]; spans: string[] } {
  const text = read(doc);
  const blocks = [...text.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
  const prose = text.replace(/^```[^\n]*\n[\s\S]*?^```/gm, "");
  return { blocks, spans: [...prose.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!) };
}

describe("docs name what the code knows", () => {
  it("every audit kind is in operations.md's list of kinds, and that list names no other", () => {
    const ops = read("docs/operations.md");
    const at = ops.lastIndexOf("Event kinds:");
    expect(at, "docs/operations.md has no 'Event kinds:' list").toBeGreaterThan(-1);
    const list = ops.slice(at, ops.indexOf("\n\n", at));
    const listed = new Set([...list.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!));
    expect(EVENT_KINDS.length).toBeGreaterThan(20);
    expect(
      sorted(EVENT_KINDS.filter((k) => !listed.has(k))).map(
        (k) => `audit kind \`${k}\` is missing from docs/operations.md's "Event kinds:" list`,
      ),
    ).toEqual([]);
    expect(
      sorted([...listed].filter((k) => !(EVENT_KINDS as string[]).includes(k))).map(
        (k) => `docs/operations.md's "Event kinds:" list names \`${k}\`, which is no audit kind`,
      ),
    ).toEqual([]);
  });

  it("every event kind has its row in host-integration.md, and no doc names an event kind that does not exist", () => {
    const doc = read("docs/host-integration.md");
    const rows = new Set([...doc.matchAll(/^\| `([a-z_]+\.[a-z_]+)` \|/gm)].map((m) => m[1]!));
    const known = new Set<string>(EVENT_TYPES);
    expect(known.size).toBeGreaterThan(20);
    expect(
      sorted([...known].filter((t) => !rows.has(t))).map(
        (t) => `event kind \`${t}\` has no table row in docs/host-integration.md`,
      ),
    ).toEqual([]);
    const prefixes = sorted([...known].map((t) => t.split(".")[0]!)).join("|");
    const unknown: string[] = [];
    for (const d of DOCS) {
      for (const m of read(d).matchAll(new RegExp(`\`((?:${prefixes})\\.[a-z_]+)\``, "g"))) {
        if (!known.has(m[1]!) && !/\.(ts|js|mjs|md|json|sql|html|css)$/.test(m[1]!))
          unknown.push(`${d} names event kind \`${m[1]}\`, which does not exist`);
      }
    }
    expect(sorted(unknown)).toEqual([]);
  });

  it("every CLI command and subcommand appears in the docs, and the docs' command lines name no other", () => {
    const commands = cliCommands();
    expect([...commands.keys()]).toEqual(expect.arrayContaining(["serve", "connections", "registry", "audit"]));
    const all = DOCS.map((d) => read(d)).join("\n");
    const missing: string[] = [];
    for (const [cmd, subs] of commands) {
      if (!all.includes(`slaude-connect ${cmd}`))
        missing.push(`CLI command \`slaude-connect ${cmd}\` appears in no doc (README.md, docs/*.md)`);
      for (const sub of subs)
        if (!new RegExp(`slaude-connect ${cmd} ${sub}\\b`).test(all))
          missing.push(`CLI command \`slaude-connect ${cmd} ${sub}\` appears in no doc (README.md, docs/*.md)`);
    }
    expect(sorted(missing)).toEqual([]);

    // What the code itself prints as "slaude-connect …" (log lines, notices) is not a command line.
    const messages = new Set<string>();
    for (const f of readdirSync(path.join(ROOT, "src"), { recursive: true, encoding: "utf8" }).filter((f) =>
      f.endsWith(".ts"),
    )) {
      for (const m of read(`src/${f}`).matchAll(/"slaude-connect ([a-z]+)/g)) messages.add(m[1]!);
    }
    const unknown: string[] = [];
    for (const d of DOCS) {
      const { blocks, spans } = codeOf(d);
      const lines = [...blocks.flatMap((b) => b.split("\n")), ...spans];
      for (const line of lines) {
        for (const m of line.matchAll(/(?:^|[|;&(]\s*|\$\s*)slaude-connect ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?/g)) {
          const [, cmd, sub] = m;
          const subs = commands.get(cmd!);
          if (!subs) {
            if (!messages.has(cmd!)) unknown.push(`${d}: \`slaude-connect ${cmd}\` is no CLI command`);
          } else if (sub && subs.size && !subs.has(sub))
            unknown.push(`${d}: \`slaude-connect ${cmd} ${sub}\`: ${sub} is no subcommand of ${cmd}`);
        }
      }
    }
    expect(sorted(unknown)).toEqual([]);
  });

  it("every environment variable of env.ts is in the docs, and no doc names a SLAUDE_ or SLACK_ variable env.ts lacks", () => {
    const vars = envVariables();
    expect(vars.size).toBeGreaterThan(30);
    const docs = DOCS.map((d) => [d, read(d)] as const);
    const missing = sorted(
      [...vars].filter(
        (v) =>
          !v.endsWith("_FILE") &&
          !docs.some(
            ([d, t]) => d !== "README.md" && d !== "docs/configuration.md" && new RegExp(`\\b${v}\\b`).test(t),
          ),
      ),
    );
    expect(
      missing.map(
        (v) =>
          `environment variable ${v} is documented in no topic page under docs/ (only the reference table or nowhere)`,
      ),
    ).toEqual([]);
    const unknown: string[] = [];
    for (const [d, t] of docs) {
      for (const m of t.matchAll(/\b((?:SLAUDE|SLACK)_[A-Z0-9_]*[A-Z0-9])\b/g))
        if (!vars.has(m[1]!)) unknown.push(`${d} names ${m[1]}, which src/config/env.ts does not read`);
    }
    expect(sorted(unknown)).toEqual([]);
  });
});
