// The "am I run directly" check behind `node dist/cli/main.js` and `tsx src/cli/main.ts`: it must
// hold through symlinks (npm's bin links, npx, global installs) and only for this very file.
import { symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { isEntryPoint } from "../../src/cli/main.js";
import { TempDirs } from "../support/foundation.js";

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

describe("isEntryPoint", () => {
  it("is true for the module's own path and for a symlink (or a chain of them) to it, false otherwise", () => {
    const dir = tmp.make();
    const real = path.join(dir, "main.js");
    const other = path.join(dir, "other.js");
    writeFileSync(real, "");
    writeFileSync(other, "");
    const link = path.join(dir, "slaude-connect");
    const linkToLink = path.join(dir, ".bin-slaude-connect");
    symlinkSync(real, link);
    symlinkSync(link, linkToLink);
    const url = pathToFileURL(real).href;
    expect(isEntryPoint(real, url)).toBe(true);
    expect(isEntryPoint(link, url)).toBe(true);
    expect(isEntryPoint(linkToLink, url)).toBe(true);
    expect(isEntryPoint(other, url)).toBe(false);
    expect(isEntryPoint(path.join(dir, "missing.js"), url)).toBe(false);
    expect(isEntryPoint(undefined, url)).toBe(false);
  });
});
