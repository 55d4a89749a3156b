// `doctor` catches what will fail at run time: credentials no configured key opens (and `serve`
// refuses to start on them), root children, vendor commands missing from the children's PATH,
// and Slack scopes the bot token lacks (asked of the fake Slack API through auth.test).
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { requiredBotScopes } from "../../src/slack/scopes.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { type FakeSlack, startFakeSlack } from "../fixtures/slack/fake-slack-api.js";
import { FAKE_BOT_TOKEN } from "../fixtures/slack/slack-ids.js";
import { newKeyB64, registryDoc, TempDirs, writeRegistryFile } from "../support/foundation.js";
import { runBin, runInProcess } from "./run.js";

const tmp = new TempDirs();
const fakes: FakeSlack[] = [];
afterEach(async () => {
  for (const f of fakes.splice(0)) await f.close();
  tmp.cleanup();
});

function baseEnv(doc: unknown = registryDoc()): NodeJS.ProcessEnv {
  const dir = tmp.make();
  return {
    SLAUDE_DATA_DIR: path.join(dir, "data"),
    SLAUDE_REGISTRY_PATH: writeRegistryFile(dir, doc),
    SLAUDE_CHROMIUM_PATH: path.join(dir, "no-such-chromium"),
    SLAUDE_CHILD_UID_BASE: "200000",
    PATH: process.env.PATH,
    USER: "tester",
  };
}

describe("doctor: what will fail", () => {
  it("credentials sealed under a key the ring lacks are an error, and serve refuses to start", async () => {
    const keyA = newKeyB64();
    const keyB = newKeyB64();
    const env = baseEnv();
    const add = await runInProcess(
      ["connections", "add", "--team", "T1", "--service", "svc"],
      { ...env, SLAUDE_ENCRYPTION_KEY: keyA },
      { stdin: "secret" },
    );
    expect(add.code, add.stderr).toBe(0);
    const idA = KeyRing.fromBase64(keyA).primaryId;

    const ok = await runInProcess(["doctor"], { ...env, SLAUDE_ENCRYPTION_KEY: keyA });
    expect(ok.stdout).toMatch(/^ok {4}stored credentials: every stored credential is sealed under a configured key$/m);

    const lost = await runInProcess(["doctor"], { ...env, SLAUDE_ENCRYPTION_KEY: keyB });
    expect(lost.code).toBe(1);
    expect(lost.stdout).toContain(
      `ERROR stored credentials: credentials sealed under a key that is not configured: 1 under key ${idA}; serve refuses to start`,
    );
    expect(lost.stdout).toMatch(/fix: put the old key in SLAUDE_ENCRYPTION_KEY_PREVIOUS/);
    // Without any key (development), a new key would be generated: nothing stored could be opened.
    const none = await runInProcess(["doctor"], env);
    expect(none.stdout).toContain(
      `ERROR stored credentials: credentials sealed under a key that is not configured: 1 under key ${idA}`,
    );

    const withPrevious = await runInProcess(["doctor"], {
      ...env,
      SLAUDE_ENCRYPTION_KEY: keyB,
      SLAUDE_ENCRYPTION_KEY_PREVIOUS: keyA,
    });
    expect(withPrevious.stdout).toMatch(/^ok {4}stored credentials: /m);

    const serve = await runBin(["serve"], { ...env, SLAUDE_ENCRYPTION_KEY: keyB, PORT: "0" });
    expect(serve.code).toBe(1);
    expect(serve.stderr).toBe(
      `error: stored credentials are sealed under a key that is not configured (1 under key ${idA}): put the old key in SLAUDE_ENCRYPTION_KEY_PREVIOUS, or revoke those connections; \`slaude-connect doctor\` explains\n`,
    );
  });

  it("a stdio vendor whose command is not on the children's PATH is an error naming the service", async () => {
    const doc = registryDoc();
    doc.services.ghost = {
      transport: { type: "stdio", command: "no-such-vendor-cmd-7f3a", credentialEnv: { T: "{{token}}" } },
      capture: { strategy: "paste" },
      ttl: "1h",
    };
    const r = await runInProcess(["doctor"], { ...baseEnv(doc), SLAUDE_ENCRYPTION_KEY: newKeyB64() });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      /^ERROR vendor commands: not found on the children's PATH \(.*\): ghost \(no-such-vendor-cmd-7f3a\)$/m,
    );
    // `node` (svc and other) is found: only the missing one is named.
    expect(r.stdout).not.toMatch(/svc \(node\)/);
  });

  it("Slack scopes: missing ones are named with what breaks; all present is ok; a bad token is an error", async () => {
    const granted = requiredBotScopes().filter((s) => s !== "users:read" && s !== "groups:history");
    const partial = await startFakeSlack({ scopes: granted });
    const full = await startFakeSlack({ scopes: [...requiredBotScopes(), "im:read"] });
    fakes.push(partial, full);
    const env = {
      ...baseEnv(),
      SLAUDE_ENCRYPTION_KEY: newKeyB64(),
      SLACK_BOT_TOKEN: FAKE_BOT_TOKEN,
      SLACK_SIGNING_SECRET: "signing-secret",
    };

    const lacking = await runInProcess(["doctor"], { ...env, SLACK_API_URL: partial.apiUrl });
    expect(lacking.code).toBe(1);
    expect(lacking.stdout).toMatch(
      /^ERROR slack scopes: bot token lacks groups:history \(replies in served threads of private channels are turns; pasted secrets are caught\), users:read \(workspace admins and owners are slaude-connect admins\)$/m,
    );
    expect(partial.calls.map((c) => c.method)).toEqual(["auth.test"]);

    const ok = await runInProcess(["doctor"], { ...env, SLACK_API_URL: full.apiUrl });
    expect(ok.stdout).toMatch(/^ok {4}slack scopes: bot token has every needed scope \(\d+\)$/m);

    const bad = await runInProcess(["doctor"], { ...env, SLACK_API_URL: full.apiUrl, SLACK_BOT_TOKEN: "xoxb-wrong" });
    expect(bad.stdout).toMatch(/^ERROR slack scopes: auth\.test failed: invalid_auth$/m);
    expect(bad.stdout + bad.stderr).not.toContain("xoxb-wrong");
  });
});
