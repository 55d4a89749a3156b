#!/usr/bin/env node
// The package's `postinstall`: applies patches/ (speed fixes to the MCP SDK's message guards, see
// docs/development.md#sdk-patches) with patch-package, to the SDK copies this package owns. In a
// checkout and in a global install the SDK sits in this package's own node_modules and is patched
// (a patch that no longer applies fails the install). In a project that depends on slaude-connect
// npm hoists the SDK into that project's node_modules, shared with its other dependents: it is left
// as published there, which changes speed only, never behaviour.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const owned = ["server", "client"].every((p) =>
  existsSync(path.join(root, "node_modules", "@modelcontextprotocol", p, "package.json")),
);
if (!owned) {
  console.log("slaude-connect: the MCP SDK is the depending project's own; patches/ not applied (speed only)");
  process.exit(0);
}
const cli = createRequire(import.meta.url).resolve("patch-package/index.js");
const r = spawnSync(process.execPath, [cli, "--error-on-fail"], { cwd: root, stdio: "inherit" });
if (r.error) throw r.error;
process.exit(r.status ?? 1);
