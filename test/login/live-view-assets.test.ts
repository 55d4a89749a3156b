// The live-view page is served from static/login/ of the package: its script and stylesheet are
// files under /login/assets/, pinned in the page by the response's CSP nonce and their SRI hash; the
// page itself carries no inline script, only the session in a JSON data element.
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { LiveViewAssets, LOGIN_ASSETS_DIR } from "../../src/login/live-view-page.js";

let app: RunningApp;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-assets-"));
  const transport = { type: "stdio", command: "true", credentialEnv: { TOKEN: "{{token}}" } };
  app = await startApp({
    config: loadConfig({
      NODE_ENV: "test",
      SLAUDE_DATA_DIR: dir,
      PORT: "0",
      SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      PATH: process.env.PATH ?? "",
    }),
    registry: parseRegistry(
      {
        services: {
          pasted: {
            transport,
            capture: { strategy: "paste", instructions: "Paste it.", fields: [{ name: "token", label: "API token" }] },
            scopes: ["thread", "user"],
          },
        },
      },
      "test",
    ),
    log: memoryLogger("error"),
    browsers: async () => {
      throw new Error("no browser in this test");
    },
  });
});
afterAll(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

const sri = (body: Buffer) => `sha256-${createHash("sha256").update(body).digest("base64")}`;

describe("the live-view page's static assets", () => {
  it("the page loads its script and stylesheet by nonce and SRI, with no inline script; the session travels as JSON data", async () => {
    const link = await app.logins.mint({
      teamId: "T1",
      channelId: "C1",
      threadTs: "1700000000.000100",
      userId: "UALICE01",
      service: "pasted",
    });
    const res = await fetch(`${app.url}${new URL(link.url).pathname}`, { redirect: "manual" });
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy") ?? "";
    const nonce = /script-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
    expect(nonce).toBeDefined();
    expect(csp).toContain(`style-src 'nonce-${nonce}'`);
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain("unsafe-inline");
    const html = await res.text();
    const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    // One data element (never executed) and one external script; nothing inline runs.
    expect(
      scripts.map((m) =>
        /type="application\/json"/.test(m[1]!) ? "data" : /src="/.test(m[1]!) && m[2] === "" ? "external" : "inline",
      ),
    ).toEqual(["data", "external"]);
    expect(JSON.parse(scripts[0]![2]!)).toEqual({ sessionId: link.sessionId });
    for (const [tag, file] of [
      ["script", "live-view.js"],
      ["link", "live-view.css"],
    ] as const) {
      const el = new RegExp(`<${tag}[^>]*/login/assets/${file.replace(".", "\\.")}\\?v=[0-9a-f]+"[^>]*>`).exec(
        html,
      )?.[0];
      expect(el, `${file} in the page`).toBeDefined();
      expect(el).toContain(`nonce="${nonce}"`);
      const body = readFileSync(new URL(file, LOGIN_ASSETS_DIR));
      expect(el).toContain(`integrity="${sri(body)}"`);
      const asset = await fetch(`${app.url}/login/assets/${file}`);
      expect(asset.status).toBe(200);
      expect(asset.headers.get("content-type")).toContain(file.endsWith(".js") ? "text/javascript" : "text/css");
      expect(asset.headers.get("x-content-type-options")).toBe("nosniff");
      expect(sri(Buffer.from(await asset.arrayBuffer()))).toBe(sri(body));
    }
  });

  it("serves only its allowlisted files", async () => {
    for (const p of [
      "/login/assets/live-view.html",
      "/login/assets/refusal.html",
      "/login/assets/",
      "/login/assets/..%2F..%2Fpackage.json",
      "/login/assets/nope.js",
    ]) {
      expect((await fetch(`${app.url}${p}`)).status, p).toBe(404);
    }
  });

  it("escapes what it puts in the page: a service name cannot open markup, the JSON cannot close its element", () => {
    const html = new LiveViewAssets().page({
      sessionId: "login_</script><script>alert(1)</script>",
      serviceName: `<img src=x onerror="alert(1)">`,
      nonce: "abc",
    });
    expect(html).not.toContain("<img src=x");
    expect(html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(html).not.toContain("</script><script>alert(1)");
    expect(html).toContain('{"sessionId":"login_\\u003c/script\\u003e');
  });
});
