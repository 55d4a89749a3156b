import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { demoRegistry } from "../../src/config/demo-registry.js";
import { testAppConfig } from "../support/app-config.js";

// The Services panel's endpoint says what the next call answers, case by case, against a real
// server: Alice holds a thread connection in thread A and had one in thread B, which Carol
// revoked; the panel says "own" in A and "needs_connect" in B (never counting A's), and the calls
// answer the same. Bob, with no grant, is asked about; out of the channel, he is not a member.

let dir: string;
let app: RunningApp;
let base: string;
let cookie = "";
let csrf = "";

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-console-standing-"));
  const config = testAppConfig(dir, `host-token-${"s".repeat(24)}`, { SLAUDE_WORKSPACE: "local" });
  app = await startApp({ config, registry: demoRegistry() });
  const link = /http:\/\/127\.0\.0\.1:\d+\/console\/\?token=[A-Za-z0-9_-]{43}(?=\s)/.exec(app.banner)![0];
  base = new URL(link).origin;
  const r = await fetch(link, { redirect: "manual" });
  cookie = (r.headers.get("set-cookie") ?? "").split(";")[0]!;
  csrf = ((await (await fetch(`${base}/console/api/session`, { headers: { cookie } })).json()) as { csrf: string })
    .csrf;
}, 60_000);

afterAll(async () => {
  await app?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function get(p: string, q: Record<string, string>): Promise<Record<string, unknown>> {
  const r = await fetch(`${base}/console/api/${p}?${new URLSearchParams(q)}`, { headers: { cookie } });
  expect(r.status).toBe(200);
  return (await r.json()) as Record<string, unknown>;
}

async function post(p: string, body: unknown): Promise<Record<string, unknown>> {
  const r = await fetch(`${base}/console/api/${p}`, {
    method: "POST",
    headers: { cookie, "x-console-csrf": csrf, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(r.status).toBe(200);
  return (await r.json()) as Record<string, unknown>;
}

const CHANNEL = "C_GENERAL";

async function standing(user: string, ts: string): Promise<string> {
  const { services } = (await get("standing", { user, channel: CHANNEL, ts })) as {
    services: { name: string; standing: { kind: string } }[];
  };
  return services.find((s) => s.name === "demo")!.standing.kind;
}

/** What list_notes answers for `user` in thread `ts`: "ok" or the refusal's code. */
async function callAnswer(user: string, ts: string): Promise<string> {
  const args = { service: "demo", tool: "list_notes", args: {}, on_behalf_of: user };
  const r = await post("host", {
    channelId: CHANNEL,
    threadTs: ts,
    userId: user,
    tool: "mcp_call",
    arguments: args,
    runId: "run_standing1",
  });
  const s = r.structured as { status: string; code?: string };
  return s.status === "ok" ? "ok" : s.code!;
}

describe("GET /console/api/standing agrees with the next call", () => {
  it("own here, needs_connect in the thread whose connection was revoked, asks without a grant, not a member out of the channel", async () => {
    const a = ((await post("threads", { channelId: CHANNEL, userId: "UALICE" })) as { thread: { threadTs: string } })
      .thread.threadTs;
    const b = ((await post("threads", { channelId: CHANNEL, userId: "UALICE" })) as { thread: { threadTs: string } })
      .thread.threadTs;
    const credential = { kind: "fields" as const, fields: { token: "demo-alice-a1b2c3d4" } };
    const draft = {
      teamId: "T_LOCAL",
      ownerUserId: "UALICE",
      service: "demo",
      scope: "thread" as const,
      channelId: CHANNEL,
      credential,
      createdBy: "UALICE",
    };
    await app.lifecycle.create({ ...draft, threadTs: a });
    const inB = await app.lifecycle.create({ ...draft, threadTs: b });
    expect(await standing("UALICE", b)).toBe("own");

    const revoked = await post("revoke", { kind: "admin", id: inB.id, asUserId: "UCAROL" });
    expect(revoked.message).toBe(
      "Revoked Alice's demo connection for the thread in #general. Its credential is wiped and every grant on it revoked.",
    );

    expect(await standing("UALICE", b)).toBe("needs_connect");
    expect(await callAnswer("UALICE", b)).toBe("needs_connect");
    expect(await standing("UALICE", a)).toBe("own");
    expect(await callAnswer("UALICE", a)).toBe("ok");
    expect(await standing("UBOB", a)).toBe("needs_approval");

    await post("membership", { channelId: CHANNEL, userId: "UBOB", member: false });
    expect(await standing("UBOB", a)).toBe("not_member");
    expect(await callAnswer("UBOB", a)).toBe("not_member");
  }, 120_000);
});
