// The live-view socket's viewport in its URL: the page names it (`w`, `h`), so the flow's browser
// is asked for as the socket opens, without the round trip of a first message; a viewport the
// URL gives wrong (out of bounds, not a number) is ignored and the first message decides, as
// before. Real app, real HTTP page and WebSocket; the browser factory records what it is asked.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import type { LoginBrowserRequest } from "../../src/login/login-service.js";
import { testAppConfig } from "../support/app-config.js";
import { until } from "../support/until.js";

const THREAD = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };

let app: RunningApp;
let dir: string;
let asked: LoginBrowserRequest["viewport"][];

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-socket-viewport-"));
  asked = [];
  app = await startApp({
    config: testAppConfig(dir, ""),
    registry: parseRegistry(
      {
        services: {
          idp: {
            transport: { type: "stdio", command: "true", credentialEnv: { C: "{{cookie_header}}" } },
            capture: { strategy: "cookie", startUrl: "http://idp.localhost:9/login", requiredCookies: ["s"] },
          },
        },
      },
      "test",
    ),
    log: memoryLogger("debug"),
    browsers: async (req) => {
      asked.push(req.viewport);
      throw new Error("no browser in this test");
    },
  });
});
afterEach(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Opens a fresh link's page and its socket with `query` appended; the socket's messages. */
async function open(query: string) {
  const m = await app.logins.mint({ ...THREAD, userId: "UALICE01", service: "idp" });
  const res = await fetch(`${app.url}${new URL(m.url).pathname}`);
  expect(res.status).toBe(200);
  const cookie = res.headers.get("set-cookie")?.split(";")[0] ?? "";
  const ws = new WebSocket(`${app.url.replace("http", "ws")}/login/ws?s=${encodeURIComponent(m.sessionId)}${query}`, {
    headers: { origin: app.url, cookie },
  });
  const messages: { type: string }[] = [];
  ws.on("message", (d) => messages.push(JSON.parse(String(d)) as { type: string }));
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  return { ws, messages, send: (x: unknown) => ws.send(JSON.stringify(x)) };
}

describe("the live-view socket's viewport in its URL", () => {
  it("starts the flow's browser at that viewport as the socket opens, before any message", async () => {
    const s = await open("&w=700&h=500");
    await until(() => asked.length > 0, 10_000, "the browser asked for");
    expect(asked).toEqual([{ width: 700, height: 500 }]);
    expect(s.messages.some((m) => m.type === "strategy")).toBe(true);
    // The socket is the flow's viewer: the browser's failure to start reaches it.
    await until(() => s.messages.some((m) => m.type === "status" && "state" in m && m.state === "failed"), 10_000);
    expect(asked).toEqual([{ width: 700, height: 500 }]);
    s.ws.close();
  });

  it.each([
    ["too small", "&w=10&h=500"],
    ["too large", "&w=700&h=99999"],
    ["not a number", "&w=7e2&h=500"],
    ["half of it", "&w=700"],
  ])("ignores a viewport that is %s and waits for the first message", async (_why, query) => {
    const s = await open(query);
    s.send({ type: "viewport", width: 640, height: 480 });
    await until(() => asked.length > 0, 10_000, "the browser asked for");
    expect(asked).toEqual([{ width: 640, height: 480 }]);
    s.ws.close();
  });
});
