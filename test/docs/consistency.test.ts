import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DOCS, FILE_VARIANTS, ROOT, read, schemaVariables } from "./sources.js";

// Docs say what is: the environment variables named by src/config/env.ts, docs/configuration.md's table and
// .env.example are the same set; every `src/…` path a doc names exists; nothing built is "coming".

/** Names in the first cell of the environment table rows of docs/configuration.md. */
function readmeVariables(): Set<string> {
  const names = new Set<string>();
  for (const line of read("docs/configuration.md").split("\n")) {
    const cell = /^\| ([^|]+) \|/.exec(line)?.[1];
    if (!cell) continue;
    for (const m of cell.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) names.add(m[1]!);
  }
  return names;
}

/** Names set (or shown commented out) in .env.example: `NAME=` at the start of a line, with or without `# `. */
function exampleVariables(): Set<string> {
  return new Set([...read(".env.example").matchAll(/^(?:# ?)?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]!));
}

const sorted = (s: Iterable<string>): string[] => [...s].sort();
const minus = (a: Set<string>, b: Set<string>): string[] => sorted([...a].filter((x) => !b.has(x)));

/** Words that call something future: a built part is described as it is, so none may appear. */
const FUTURE_MARKER = /\b(coming|not yet built|not built yet|not yet implemented|planned)\b/gi;

describe("docs say what is", () => {
  it("src/config/env.ts, the environment table of docs/configuration.md and .env.example name the same variables", () => {
    const schema = schemaVariables();
    expect(schema.size).toBeGreaterThan(30);
    const known = new Set([...schema, ...FILE_VARIANTS]);
    const readme = readmeVariables();
    const example = exampleVariables();
    expect(minus(schema, readme), "read by env.ts but missing from the docs/configuration.md table").toEqual([]);
    expect(minus(readme, known), "in the docs/configuration.md table but read by nothing").toEqual([]);
    expect(minus(schema, example), "read by env.ts but missing from .env.example").toEqual([]);
    expect(minus(example, known), "in .env.example but read by nothing").toEqual([]);
  });

  it("every src/ path a doc names exists", () => {
    const missing: string[] = [];
    for (const doc of DOCS) {
      for (const m of read(doc).matchAll(/\bsrc\/[A-Za-z0-9_./-]*[A-Za-z0-9_]/g)) {
        if (!existsSync(path.join(ROOT, m[0]))) missing.push(`${doc}: ${m[0]}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("no doc calls anything 'coming' or 'not yet built'", () => {
    const found: string[] = [];
    for (const doc of [...DOCS, ".env.example"]) {
      const lines = read(doc).split("\n");
      lines.forEach((line, i) => {
        for (const m of line.matchAll(FUTURE_MARKER))
          found.push(`${doc}:${i + 1}: ${m[0]}: ${line.trim().slice(0, 120)}`);
      });
    }
    expect(found).toEqual([]);
  });
});
