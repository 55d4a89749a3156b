// Smoke test: the stdio fixture vendor runs as a real child and every tool behaves as documented.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { VENDOR_STDIO_ARGS, VENDOR_STDIO_PATH } from "../fixtures/paths.js";
import { until } from "../support/until.js";

const TOKEN = "tok/en+secret=1 ü&x";
const USER = "alice";

let dir: string;
const pidsToKill = new Set<number>();
const clients: Client[] = [];

function readLines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function textOf(result: Awaited<ReturnType<Client["callTool"]>>): string {
  const content = result.content as Array<{ type: string; text?: string }>;
  return content.map((c) => c.text ?? "").join("");
}

async function connectVendor(
  extraEnv: Record<string, string> = {},
): Promise<{ client: Client; transport: StdioClientTransport }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...VENDOR_STDIO_ARGS],
    env: {
      PATH: process.env.PATH ?? "",
      VENDOR_TOKEN: TOKEN,
      VENDOR_USER: USER,
      VENDOR_WRITE_LOG: join(dir, "writes.jsonl"),
      VENDOR_EVENT_LOG: join(dir, "events.log"),
      ...extraEnv,
    },
    stderr: "pipe",
  });
  const client = new Client({ name: "smoke", version: "0.0.1" });
  await client.connect(transport);
  if (transport.pid !== null) pidsToKill.add(transport.pid);
  clients.push(client);
  return { client, transport };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "vendor-stdio-smoke-"));
});

afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  for (const pid of pidsToKill) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("vendor-stdio fixture", () => {
  let client: Client;
  let vendorPid: number;

  beforeAll(async () => {
    const c = await connectVendor();
    client = c.client;
    vendorPid = c.transport.pid ?? -1;
  });

  it("lists every tool and logs its start", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      [
        "crash",
        "echo",
        "env_dump",
        "fail_with_token",
        "flood",
        "hang",
        "leak_token",
        "progress_burst",
        "read_item",
        "slow",
        "spawn_grandchild",
        "wait_for_file",
        "write_item",
      ].sort(),
    );
    expect(readLines(join(dir, "events.log"))).toContain(`start ${vendorPid}`);
  });

  it("wait_for_file holds the call until the file exists", async () => {
    const gate = join(dir, "gate");
    const call = client.callTool({ name: "wait_for_file", arguments: { path: gate } });
    // The vendor polls for the file; creating it after the request is sent releases the call.
    writeFileSync(gate, "");
    expect(textOf(await call)).toBe("released");
  });

  it("echo", async () => {
    expect(textOf(await client.callTool({ name: "echo", arguments: { text: "hi" } }))).toBe("hi");
  });

  it("read_item reports the user and a token fingerprint, never the token", async () => {
    const text = textOf(await client.callTool({ name: "read_item", arguments: { id: "i1" } }));
    expect(JSON.parse(text)).toEqual({
      id: "i1",
      ranAs: USER,
      tokenFingerprint: createHash("sha256").update(TOKEN).digest("hex").slice(0, 12),
    });
    expect(text).not.toContain(TOKEN);
  });

  it("write_item returns and logs exactly the args that arrived", async () => {
    const text = textOf(await client.callTool({ name: "write_item", arguments: { id: "w1", value: "v1" } }));
    expect(JSON.parse(text)).toEqual({ written: { id: "w1", value: "v1" }, ranAs: USER });
    const lines = readLines(join(dir, "writes.jsonl")).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toContainEqual({ id: "w1", value: "v1", ranAs: USER, pid: vendorPid });
  });

  it("rejects unknown arguments (strict schemas) as an isError result", async () => {
    const result = await client.callTool({ name: "echo", arguments: { text: "x", extra: 1 } });
    expect(result.isError).toBe(true);
  });

  it("env_dump shows env, argv, cwd, home, tmp, uid and the raw token", async () => {
    const dump = JSON.parse(textOf(await client.callTool({ name: "env_dump", arguments: {} }))) as {
      env: Record<string, string>;
      argv: string[];
      cwd: string;
      homedir: string;
      tmpdir: string;
      uid: number | undefined;
      token: string;
    };
    expect(dump.env.VENDOR_TOKEN).toBe(TOKEN);
    expect(dump.env.PATH).toBe(process.env.PATH);
    expect(dump.token).toBe(TOKEN);
    expect(dump.argv).toContain(VENDOR_STDIO_PATH);
    expect(dump.cwd).toBe(process.cwd());
    expect(typeof dump.homedir).toBe("string");
    expect(typeof dump.tmpdir).toBe("string");
    expect(dump.uid).toBe(process.getuid?.());
  });

  it("leak_token returns the token raw, in basic-auth base64 and URI-encoded", async () => {
    const text = textOf(await client.callTool({ name: "leak_token", arguments: {} }));
    expect(text).toContain(TOKEN);
    expect(text).toContain(Buffer.from(`${USER}:${TOKEN}`).toString("base64"));
    expect(text).toContain(encodeURIComponent(TOKEN));
  });

  it("fail_with_token surfaces the token in an isError result", async () => {
    const result = await client.callTool({ name: "fail_with_token", arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain(TOKEN);
  });

  it("slow sends one progress notification per step", async () => {
    // Counted off the wire: the SDK client drops a progress notification that arrives in the same
    // chunk as the response (it dispatches notifications a microtask late), which a loaded machine
    // makes likely; what the fixture sends is the question here.
    const { client: own, transport } = await connectVendor();
    const progress: number[] = [];
    const deliver = transport.onmessage;
    transport.onmessage = (m) => {
      if ("method" in m && m.method === "notifications/progress")
        progress.push((m.params as { progress: number }).progress);
      deliver?.(m);
    };
    const result = await own.callTool({ name: "slow", arguments: { steps: 3, delayMs: 10 } }, undefined, {
      onprogress: () => {},
    });
    expect(textOf(result)).toBe("done");
    expect(progress).toEqual([1, 2, 3]);
  });

  it("slow: cancellation through an AbortSignal reaches the vendor", async () => {
    const before = readLines(join(dir, "events.log")).filter((l) => l.startsWith("cancelled")).length;
    const ac = new AbortController();
    const call = client.callTool({ name: "slow", arguments: { steps: 100, delayMs: 50 } }, undefined, {
      signal: ac.signal,
      onprogress: () => ac.abort("test abort"),
    });
    await expect(call).rejects.toThrow();
    await until(() => readLines(join(dir, "events.log")).filter((l) => /^cancelled \d+$/.test(l)).length > before);
  });

  it("hang is ended by a request timeout (and the cancellation reaches the vendor)", async () => {
    const before = readLines(join(dir, "events.log")).filter((l) => l.startsWith("cancelled")).length;
    await expect(client.callTool({ name: "hang", arguments: {} }, undefined, { timeout: 300 })).rejects.toThrow(
      /timed out/i,
    );
    await until(() => readLines(join(dir, "events.log")).filter((l) => l.startsWith("cancelled")).length > before);
  });

  it("flood returns exactly the requested bytes in 100-char lines", async () => {
    const text = textOf(await client.callTool({ name: "flood", arguments: { bytes: 100_050 } }));
    expect(Buffer.byteLength(text)).toBe(100_050);
    expect(text.split("\n")[0]).toHaveLength(99);
  });

  it("spawn_grandchild leaves a live grandchild in the vendor's process group", async () => {
    const { pid } = JSON.parse(textOf(await client.callTool({ name: "spawn_grandchild", arguments: {} }))) as {
      pid: number;
    };
    pidsToKill.add(pid);
    expect(isAlive(pid)).toBe(true);
    const pgrp = (p: number): string => readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1]?.split(" ")[2] ?? "";
    expect(pgrp(pid)).toBe(pgrp(vendorPid));
  });
});

describe("vendor-stdio process lifecycle", () => {
  it("crash: the client sees the call fail and the connection close", async () => {
    const { client } = await connectVendor();
    let closed = false;
    client.onclose = () => {
      closed = true;
    };
    await expect(client.callTool({ name: "crash", arguments: {} })).rejects.toThrow();
    await until(() => closed);
  });

  it("exits promptly when its stdin closes", async () => {
    const { client, transport } = await connectVendor();
    const pid = transport.pid ?? -1;
    await client.close();
    await until(() => !isAlive(pid), 10_000);
    // The SDK escalates to SIGTERM after 2 s; the vendor's own log says stdin EOF ended it.
    expect(readLines(join(dir, "events.log"))).toContain(`eof-exit ${pid}`);
  });

  it("exits on stdin close even with a grandchild alive", async () => {
    const { client, transport } = await connectVendor();
    const pid = transport.pid ?? -1;
    const { pid: gc } = JSON.parse(textOf(await client.callTool({ name: "spawn_grandchild", arguments: {} }))) as {
      pid: number;
    };
    pidsToKill.add(gc);
    await client.close();
    await until(() => !isAlive(pid), 10_000);
    expect(readLines(join(dir, "events.log"))).toContain(`eof-exit ${pid}`);
    // The orphaned grandchild survives: killing the whole group is the broker's job.
    expect(isAlive(gc)).toBe(true);
  });

  it("VENDOR_IGNORE_SIGTERM=1 survives stdin close and SIGTERM; only SIGKILL ends it", async () => {
    const eventLog = join(dir, "ignore-sigterm.log");
    const child = spawn(process.execPath, [...VENDOR_STDIO_ARGS], {
      env: { PATH: process.env.PATH ?? "", VENDOR_IGNORE_SIGTERM: "1", VENDOR_EVENT_LOG: eventLog },
      stdio: ["pipe", "ignore", "ignore"],
    });
    const pid = child.pid ?? -1;
    pidsToKill.add(pid);
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once("exit", (_code, signal) => resolve(signal)),
    );
    await until(() => readLines(eventLog).includes(`start ${pid}`), 30_000);
    child.stdin?.end();
    await until(() => readLines(eventLog).includes(`eof-ignored ${pid}`), 10_000, "the vendor to see stdin close");
    expect(isAlive(pid)).toBe(true);
    child.kill("SIGTERM");
    await until(() => readLines(eventLog).includes(`sigterm-ignored ${pid}`), 10_000, "the vendor to see SIGTERM");
    expect(isAlive(pid)).toBe(true);
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
  });
});
