// Full results on demand through the real /mcp endpoint: a real app, a real SDK client over
// Streamable HTTP, and a real fixture vendor child whose result is too big to return inline.
// The truncated answer links to the stored result; its owner pages through it with resources/read;
// another user, another thread, another team, an unknown id and an expired result all get the
// same "not found". The vendor's credential (a canary) appears nowhere.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { ManualClock } from "../../src/clock/clock.js";
import { parseRegistry } from "../../src/config/registry.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import { REDACTED } from "../../src/hygiene/redact.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { ALICE, BOB, THREAD, TSX_LOADER } from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";

const HOST_TOKEN = `host-${randomBytes(8).toString("hex")}`;
const CANARY = `canary-${randomBytes(12).toString("hex")}`;
const BIG_VENDOR = fileURLToPath(new URL("../fixtures/big-result-vendor.ts", import.meta.url));
const OTHER_THREAD: ThreadRef = { ...THREAD, threadTs: "1700000000.000200" };
const OTHER_TEAM: ThreadRef = { ...THREAD, teamId: "T2" };
// 400 lines of 35 bytes (one é each); the canary on line 300, far past the inline cap.
const ARGS = { lines: 400, width: 20, secretAt: 300 };
const EXPECTED = Array.from({ length: ARGS.lines }, (_, k) =>
  k + 1 === ARGS.secretAt
    ? `line ${k + 1} secret: ${REDACTED}`
    : `line ${String(k + 1).padStart(6, "0")} é ${"x".repeat(ARGS.width)}`,
).join("\n");

let dir: string;
let app: RunningApp;
let clock: ManualClock;
const log = memoryLogger("debug");
const clients: Client[] = [];

/** Reports whose turn it is in `thread` (a new turn supersedes the previous one). */
async function turn(thread: ThreadRef, user: string): Promise<void> {
  const r = await fetch(`${app.url}/v1/turns`, {
    method: "POST",
    headers: { authorization: `Bearer ${HOST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      team_id: thread.teamId,
      channel_id: thread.channelId,
      thread_ts: thread.threadTs,
      user_id: user,
    }),
  });
  expect(r.status).toBe(204);
}

/** An MCP session bound to `thread`, with `user`'s turn live there. */
async function session(thread: ThreadRef, user: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
    requestInit: {
      headers: {
        Authorization: `Bearer ${HOST_TOKEN}`,
        "X-Slaude-Thread": `${thread.teamId}/${thread.channelId}/${thread.threadTs}`,
      },
    },
  });
  const client = new Client({ name: "results-test", version: "1" });
  await client.connect(transport);
  clients.push(client);
  await turn(thread, user);
  return client;
}

/** The JSON-RPC error a read answers, or "served". */
async function readError(client: Client, uri: string): Promise<unknown> {
  try {
    await client.readResource({ uri });
    return "served";
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown; data?: unknown };
    return { code: e.code, message: e.message };
  }
}

/** The page text without the footer naming the next page. */
const body = (text: string): string =>
  text.replace(/\n\[slaude-connect: page \d+ of \d+; the next page is [^\]]+\]$/, "");

let alice: Client;
let link: { uri: string; pages: number; bytes: number };

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-results-"));
  clock = new ManualClock(Date.now());
  const config = testAppConfig(dir, HOST_TOKEN, {
    SLAUDE_RESULT_MAX_BYTES: "2000",
    SLAUDE_RESULT_MAX_LINES: "50",
    SLAUDE_RESULT_TTL_SECONDS: "120",
  });
  const registry = parseRegistry(
    {
      services: {
        big: {
          transport: {
            type: "stdio",
            command: process.execPath,
            args: ["--import", TSX_LOADER, BIG_VENDOR],
            credentialEnv: { VENDOR_TOKEN: "{{token}}" },
          },
          capture: { strategy: "paste", fields: [{ name: "token", label: "Token" }] },
          scopes: ["thread", "user"],
          tools: { listing: ["borrowable", "read"] },
        },
      },
    },
    "results-test.json",
  );
  const membership = new StaticMembership()
    .add(THREAD.teamId, THREAD.channelId, ALICE, BOB)
    .add(OTHER_TEAM.teamId, OTHER_TEAM.channelId, ALICE);
  app = await startApp({
    config,
    log,
    clock,
    membership,
    registry,
    reapIntervalMs: 24 * 3_600_000,
  }) /* the reapers run on this clock: keep them out of the 2 min this file advances, so the test reaps by hand */;
  await app.lifecycle.create({
    teamId: THREAD.teamId,
    ownerUserId: ALICE,
    service: "big",
    scope: "user",
    channelId: null,
    threadTs: null,
    credential: { kind: "fields", fields: { token: CANARY } },
    createdBy: ALICE,
  });
  alice = await session(THREAD, ALICE);
}, 60_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("full results on demand over /mcp", () => {
  it("initialize advertises resources; the list holds nobody's results; the one template is named", async () => {
    expect(alice.getServerCapabilities()?.resources).toBeDefined();
    expect(alice.getServerCapabilities()?.tools?.listChanged).toBe(false);
    expect((await alice.listResources()).resources).toEqual([]);
    expect((await alice.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toEqual([
      "slaude://results/{id}{?page}",
    ]);
    expect((await alice.listTools()).tools).toHaveLength(5);
    expect(alice.getInstructions()).toContain("resources/read");
  });

  it("a truncated mcp_call answer carries a resource_link and a fullResult to the stored, redacted result", async () => {
    const r = await alice.callTool({
      name: "mcp_call",
      arguments: { service: "big", tool: "listing", args: ARGS, on_behalf_of: ALICE },
    });
    expect(r.isError).toBeFalsy();
    const content = r.content as Array<{ type: string; text?: string; uri?: string; size?: number; mimeType?: string }>;
    const links = content.filter((c) => c.type === "resource_link");
    expect(links).toHaveLength(1);
    const structured = r.structuredContent as {
      truncated: boolean;
      fullResult: { uri: string; pages: number; bytes: number; expiresAt: string };
    };
    expect(structured.truncated).toBe(true);
    link = structured.fullResult;
    expect(link.uri).toMatch(/^slaude:\/\/results\/res_[A-Za-z0-9_-]{16}$/);
    expect(links[0]).toMatchObject({ uri: link.uri, mimeType: "text/plain", size: Buffer.byteLength(EXPECTED) });
    expect(link.bytes).toBe(Buffer.byteLength(EXPECTED));
    expect(link.pages).toBe(8);
    expect(Date.parse(structured.fullResult.expiresAt)).toBe(clock.now() + 120_000);
    const text = content.map((c) => c.text ?? "").join("\n");
    expect(text).toContain(`${link.uri}?page=2`);
    expect(text).not.toContain(CANARY);
  });

  it("its owner, in its thread, reads every page: they join to the whole redacted result, each read audited", async () => {
    let joined = "";
    for (let page = 1; page <= link.pages; page++) {
      const uri = page === 1 ? link.uri : `${link.uri}?page=${page}`;
      const r = await alice.readResource({ uri });
      expect(r.contents).toHaveLength(1);
      const c = r.contents[0] as { uri: string; text: string; mimeType: string; _meta: Record<string, unknown> };
      expect(c).toMatchObject({ uri, mimeType: "text/plain" });
      expect(c._meta["slaude-connect/page"]).toEqual({
        page,
        pages: link.pages,
        ...(page < link.pages ? { next: `${link.uri}?page=${page + 1}` } : {}),
      });
      expect(Buffer.byteLength(body(c.text))).toBeLessThanOrEqual(2000);
      joined += body(c.text);
    }
    expect(joined).toBe(EXPECTED);
    expect(joined).not.toContain(CANARY);
    const reads = await app.store.audit.query({ event: "result_read" });
    expect(reads).toHaveLength(link.pages);
    expect(
      reads.every(
        (a) =>
          a.callerUserId === ALICE &&
          a.ownerUserId === ALICE &&
          a.service === "big" &&
          a.tool === "listing" &&
          a.threadTs === THREAD.threadTs,
      ),
    ).toBe(true);
    expect(await app.store.audit.count({ event: "result_stored" })).toBe(1);
  });

  it("another user in the thread, the owner in another thread or team, an unknown id: the same not-found", async () => {
    const notFound = { code: -32602, message: expect.stringContaining("Resource not found") };
    const answers: unknown[] = [];
    // Bob's turn in the same thread, same session.
    await turn(THREAD, BOB);
    answers.push(await readError(alice, link.uri), await readError(alice, `${link.uri}?page=2`));
    await turn(THREAD, ALICE);
    expect(await readError(alice, link.uri)).toBe("served");
    // Alice in another thread of the same channel, and in another team.
    answers.push(await readError(await session(OTHER_THREAD, ALICE), link.uri));
    answers.push(await readError(await session(OTHER_TEAM, ALICE), link.uri));
    // Forged ids and addresses, by the owner in the right thread.
    answers.push(
      await readError(alice, "slaude://results/res_AAAAAAAAAAAAAAAA"),
      await readError(alice, `${link.uri.slice(0, -1)}${link.uri.endsWith("A") ? "B" : "A"}`),
      await readError(alice, "slaude://results/../etc/passwd"),
      await readError(alice, "file:///etc/passwd"),
    );
    for (const a of answers) expect(a).toEqual(notFound);
    // Not merely alike: identical, so nothing tells them apart.
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    const why = (await app.store.audit.query({ event: "result_read", take: "latest", limit: 9 })).map(
      (a) => a.errorCode,
    );
    expect(why).toEqual([
      "other_user",
      "other_user",
      null,
      "other_thread",
      "other_team",
      "unknown",
      "unknown",
      "malformed",
      "malformed",
    ]);
  });

  it("an expired result is not found either, and the reaper deletes it", async () => {
    await clock.advanceAsync(120_000);
    expect(await readError(alice, link.uri)).toEqual({
      code: -32602,
      message: expect.stringContaining("Resource not found"),
    });
    expect(await app.broker.deps.results.reap()).toBe(1);
    expect(await app.store.results.get(link.uri.slice("slaude://results/".length))).toBeUndefined();
    const last = await app.store.audit.query({ event: "result_read", take: "latest", limit: 1 });
    expect(last[0]?.errorCode).toBe("expired");
  });

  it("the canary never reached the log", () => {
    expect(log.lines.join("\n")).not.toContain(CANARY);
  });
});
