import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

// The folder-graph rule of `npm run lint:deps` (.dependency-cruiser.cjs) run by dependency-cruiser
// itself on small trees: a cycle between folders fails it, through a type import or a subfolder too,
// and the same tree without the edge back passes.

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CONFIG = path.join(ROOT, ".dependency-cruiser.cjs");
const DEPCRUISE = path.join(ROOT, "node_modules", ".bin", "depcruise");
const dirs: string[] = [];

afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Writes `files` (path → source) under a fresh project with its own tsconfig, and runs the rule there. */
function cruise(files: Record<string, string>): { status: number | null; out: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-folders-"));
  dirs.push(dir);
  const compilerOptions = { module: "nodenext", moduleResolution: "nodenext", strict: true };
  const tsconfig = { compilerOptions, include: ["src"] };
  writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(tsconfig));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  const args = ["src", "--config", CONFIG, "--output-type", "err"];
  const r = spawnSync(DEPCRUISE, args, { cwd: dir, encoding: "utf8", shell: false });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

const downward = {
  "src/domain/thread.ts": "export interface ThreadRef { readonly id: string }\n",
  "src/store/store.ts":
    'import type { ThreadRef } from "../domain/thread.js";\nexport interface Store { get(t: ThreadRef): void }\n',
};

describe("the folder-graph rule", () => {
  it("passes a tree whose folders only import downward", () => {
    const r = cruise(downward);
    expect(r.out).toContain("no dependency violations found");
    expect(r.status).toBe(0);
  });

  it("fails when a folder imports a type back from a folder that imports it", () => {
    const back = 'import type { Store } from "../store/store.js";\nexport type S = Store;\n';
    const r = cruise({ ...downward, "src/domain/uses-store.ts": back });
    expect(r.status).not.toBe(0);
    expect(r.out).toContain("no-folder-cycle");
    expect(r.out).toMatch(/src\/store\s*→\s*src\/domain/);
  });

  it("counts a subfolder's imports as its folder's: store/postgres → cluster → store is a cycle", () => {
    const r = cruise({
      ...downward,
      "src/store/postgres/pg.ts":
        'import type { Signals } from "../../cluster/signals.js";\nexport type P = Signals;\n',
      "src/cluster/signals.ts":
        'import type { Store } from "../store/store.js";\nexport interface Signals { s: Store }\n',
    });
    expect(r.status).not.toBe(0);
    expect(r.out).toMatch(/no-folder-cycle: src\/(store|cluster)/);
  });
});
