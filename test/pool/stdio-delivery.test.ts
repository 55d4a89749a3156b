// Progress that arrives in the same stdout chunk as its call's result still reaches the client:
// a real child writes three progress notifications and the result in one write.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, expect, it } from "vitest";
import { GroupStdioTransport } from "../../src/pool/group-stdio-transport.js";

const BURST_VENDOR = fileURLToPath(new URL("../fixtures/burst-vendor.mjs", import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

it("delivers progress read in one chunk with the result before the result", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-burst-"));
  dirs.push(dir);
  const transport = new GroupStdioTransport({
    command: process.execPath,
    args: [BURST_VENDOR],
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    cwd: dir,
  });
  const client = new Client({ name: "burst-test", version: "1" });
  await client.connect(transport);
  try {
    for (let round = 0; round < 5; round++) {
      const seen: number[] = [];
      const r = await client.callTool({ name: "burst", arguments: {} }, undefined, {
        onprogress: (p) => seen.push(p.progress),
      });
      expect(r.content).toEqual([{ type: "text", text: "done" }]);
      expect(seen).toEqual([1, 2, 3]);
    }
  } finally {
    await client.close();
  }
});
