import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

// The log's correlation ids are passed down explicitly (Logger.with), never kept in an ambient
// AsyncLocalStorage: on Node 20 one AsyncLocalStorage in use puts a promise hook on every promise of
// the process (docs/performance.md). This keeps any src module from bringing one back.

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : e.name.endsWith(".ts") ? [p] : [];
  });
}

describe("no async context in src", () => {
  it("no module imports node:async_hooks (AsyncLocalStorage, AsyncResource, createHook)", () => {
    const files = sources(path.resolve(import.meta.dirname, "../../src"));
    expect(files.length).toBeGreaterThan(100);
    const offenders = files.filter((f) =>
      /(from|import|require)\s*\(?\s*["'](node:)?async_hooks["']|new\s+AsyncLocalStorage\b|\bcreateHook\s*\(/.test(
        readFileSync(f, "utf8"),
      ),
    );
    expect(offenders).toEqual([]);
  });
});
