import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { demoRegistry } from "../../src/config/demo-registry.js";
import { testAppConfig } from "../support/app-config.js";

// Console access (issue 10 item 3): the token link is the only way in; API requests without the
// session cookie, state-changing requests without the CSRF header, and requests with a foreign
// Origin or Host are refused, and a refused request changes nothing. A planted credential never
// reaches anything the console sends to the page.

const CANARY = "demo-canary-Zq9CanaryValue7731";
let dir: string;
let app: RunningApp;
let base: string;
let link: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-console-access-"));
  app = await startApp({
    config: testAppConfig(dir, `host-token-${"x".repeat(24)}`, { SLAUDE_WORKSPACE: "local" }),
    registry: demoRegistry(),
  });
  // The console link is printed once, in the start-up block.
  const printed = /http:\/\/127\.0\.0\.1:\d+\/console\/\?token=[A-Za-z0-9_-]{43}(?=\s)/.exec(app.banner);
  expect(printed).not.toBeNull();
  link = printed![0];
  base = new URL(link).origin;
});

afterAll(async () => {
  await app?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Signs in with the token link; returns the cookie and the session's CSRF token. */
async function signIn(): Promise<{ cookie: string; csrf: string }> {
  const r = await fetch(link, { redirect: "manual" });
  expect(r.status).toBe(303);
  expect(r.headers.get("location")).toBe("/console/");
  const setCookie = r.headers.get("set-cookie") ?? "";
  expect(setCookie).toMatch(/; Path=\/console; HttpOnly; SameSite=Strict$/);
  const cookie = setCookie.split(";")[0]!;
  const s = await fetch(`${base}/console/api/session`, { headers: { cookie } });
  expect(s.status).toBe(200);
  const { csrf } = (await s.json()) as { csrf: string };
  expect(csrf).toMatch(/^[A-Za-z0-9_-]{32}$/);
  return { cookie, csrf };
}

async function isMember(cookie: string, userId: string): Promise<boolean> {
  const r = await fetch(`${base}/console/api/workspace`, { headers: { cookie } });
  const w = (await r.json()) as { channels: { id: string; members: string[] }[] };
  return w.channels.find((c) => c.id === "C_GENERAL")!.members.includes(userId);
}

describe("console access", () => {
  it("refuses the page and every API without the session cookie, and a wrong token", async () => {
    for (const p of ["/console/api/session", "/console/api/workspace", "/console/api/events", "/console/api/audit"]) {
      const r = await fetch(base + p);
      expect(r.status, p).toBe(401);
      expect(((await r.json()) as { error: string }).error).toBe("no_session");
    }
    const page = await fetch(`${base}/console/`);
    expect(page.status).toBe(401);
    expect(await page.text()).toContain("Open the console link");
    expect((await fetch(`${base}/console/app.js`)).status).toBe(401);
    const wrong = await fetch(`${base}/console/?token=${"A".repeat(43)}`, { redirect: "manual" });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("set-cookie")).toBeNull();
    const forged = await fetch(`${base}/console/api/session`, {
      headers: { cookie: `slaude_console_${new URL(base).port}=${"B".repeat(43)}` },
    });
    expect(forged.status).toBe(401);
  });

  it("refuses a state-changing request without the CSRF header, or with a wrong one, and nothing changes", async () => {
    const { cookie, csrf } = await signIn();
    expect(await isMember(cookie, "UBOB")).toBe(true);
    const body = JSON.stringify({ channelId: "C_GENERAL", userId: "UBOB", member: false });
    const none = await fetch(`${base}/console/api/membership`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json" },
      body,
    });
    expect(none.status).toBe(403);
    expect(((await none.json()) as { error: string }).error).toBe("csrf");
    const wrong = await fetch(`${base}/console/api/membership`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json", "x-console-csrf": `${csrf.slice(1)}x` },
      body,
    });
    expect(wrong.status).toBe(403);
    const noCookie = await fetch(`${base}/console/api/membership`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-console-csrf": csrf },
      body,
    });
    expect(noCookie.status).toBe(401);
    expect(await isMember(cookie, "UBOB")).toBe(true);
    // With both, it applies (and is put back).
    const ok = await fetch(`${base}/console/api/membership`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json", "x-console-csrf": csrf },
      body,
    });
    expect(ok.status).toBe(200);
    expect(await isMember(cookie, "UBOB")).toBe(false);
    await fetch(`${base}/console/api/membership`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json", "x-console-csrf": csrf },
      body: JSON.stringify({ channelId: "C_GENERAL", userId: "UBOB", member: true }),
    });
    expect(await isMember(cookie, "UBOB")).toBe(true);
  });

  it("refuses a foreign Origin and a foreign Host even with a valid cookie and CSRF token", async () => {
    const { cookie, csrf } = await signIn();
    const body = JSON.stringify({ channelId: "C_GENERAL", userId: "UBOB", member: false });
    const origin = await fetch(`${base}/console/api/membership`, {
      method: "POST",
      headers: { cookie, origin: "http://evil.example", "content-type": "application/json", "x-console-csrf": csrf },
      body,
    });
    expect(origin.status).toBe(403);
    expect(((await origin.json()) as { error: string }).error).toBe("bad_origin");
    // A sibling port on localhost is another origin (cookies are not isolated by port; Origin is).
    const sibling = await fetch(`${base}/console/api/membership`, {
      method: "POST",
      headers: { cookie, origin: "http://127.0.0.1:1", "content-type": "application/json", "x-console-csrf": csrf },
      body,
    });
    expect(sibling.status).toBe(403);
    expect(await isMember(cookie, "UBOB")).toBe(true);
    // fetch cannot set Host: a raw request can, as a DNS-rebinding page's browser would send it.
    const hostStatus = await new Promise<number | undefined>((resolve, reject) => {
      const req = http.request(
        `${base}/console/api/session`,
        { headers: { cookie, host: `evil.example:${new URL(base).port}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode);
        },
      );
      req.on("error", reject);
      req.end();
    });
    expect(hostStatus).toBe(403);
    const sameOrigin = await fetch(`${base}/console/api/session`, { headers: { cookie, origin: base } });
    expect(sameOrigin.status).toBe(200);
  });

  it("validates bodies strictly: unknown keys, unknown users and malformed ids are refused", async () => {
    const { cookie, csrf } = await signIn();
    const post = (p: string, b: unknown) =>
      fetch(`${base}/console/api/${p}`, {
        method: "POST",
        headers: { cookie, "content-type": "application/json", "x-console-csrf": csrf },
        body: JSON.stringify(b),
      });
    expect(
      (await post("membership", { channelId: "C_GENERAL", userId: "UBOB", member: false, admin: true })).status,
    ).toBe(400);
    expect((await post("membership", { channelId: "C_GENERAL", userId: "U_NOBODY", member: false })).status).toBe(404);
    expect((await post("decide", { approvalId: "../x", decision: "allowed_thread", asUserId: "UALICE" })).status).toBe(
      400,
    );
    expect(
      (
        await post("host", {
          channelId: "C_GENERAL",
          threadTs: "1.1",
          userId: "UALICE",
          tool: "shell",
          arguments: {},
          runId: "run_abcdefgh",
        })
      ).status,
    ).toBe(400);
    expect(await isMember(cookie, "UBOB")).toBe(true);
  });

  it("keeps at most 16 event streams: a 17th closes the oldest", async () => {
    const { cookie } = await signIn();
    const aborts: AbortController[] = [];
    const readers: ReadableStreamDefaultReader<Uint8Array>[] = [];
    try {
      for (let i = 0; i < 17; i++) {
        const a = new AbortController();
        aborts.push(a);
        const r = await fetch(`${base}/console/api/events`, { headers: { cookie }, signal: a.signal });
        expect(r.headers.get("content-type")).toMatch(/^text\/event-stream/);
        const reader = r.body!.getReader();
        expect(new TextDecoder().decode((await reader.read()).value)).toContain("retry:");
        readers.push(reader);
      }
      // The first stream was ended by the server when the 17th opened.
      await expect(
        readers[0]!.read().then(
          (x) => x.done,
          () => true,
        ),
      ).resolves.toBe(true);
    } finally {
      for (const a of aborts) a.abort();
    }
  });

  it("never sends a stored credential to the page", async () => {
    const { cookie } = await signIn();
    const conn = await app.lifecycle.create({
      teamId: "T_LOCAL",
      ownerUserId: "UALICE",
      service: "demo",
      scope: "user",
      channelId: null,
      threadTs: null,
      credential: { kind: "fields", fields: { token: CANARY } },
      createdBy: "UALICE",
    });
    const pages = ["connections?user=UALICE", "connections?user=UCAROL", "audit", "inbox?user=UALICE", "workspace"];
    for (const p of pages) {
      const r = await fetch(`${base}/console/api/${p}`, { headers: { cookie } });
      expect(r.status, p).toBe(200);
      const text = await r.text();
      expect(text, p).not.toContain(CANARY);
      expect(text, p).not.toContain("sealed");
    }
    const carol = (await (
      await fetch(`${base}/console/api/connections?user=UCAROL`, { headers: { cookie } })
    ).json()) as { admin: { all: { id: string }[] } | null };
    expect(carol.admin?.all.map((c) => c.id)).toContain(conn.id);
  });
});

describe("no console without the local workspace", () => {
  it("serves no /console route at all when the local workspace does not run", async () => {
    const other = mkdtempSync(path.join(os.tmpdir(), "slaude-console-none-"));
    const none = await startApp({
      config: testAppConfig(other, `host-token-${"y".repeat(24)}`, { SLAUDE_WORKSPACE: "none" }),
    });
    try {
      for (const p of ["/console", "/console/", "/console/api/session", "/console/app.js"]) {
        const r = await fetch(`http://127.0.0.1:${none.port}${p}`, { redirect: "manual" });
        expect(r.status, p).toBe(404);
      }
      expect(none.banner).not.toContain("/console");
    } finally {
      await none.close();
      rmSync(other, { recursive: true, force: true });
    }
  });
});
