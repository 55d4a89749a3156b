// Smaller Slack defects of issue 9 item 16, end to end: real Bolt (HTTP mode, on the broker's
// server) against the fake Slack Web API on 127.0.0.1, properly signed requests, a real SQLite file.
// - Continue on a consent card whose link cannot be minted says why (each reason its own answer),
//   not always "can only be made from the thread".
// - An approval click whose value cannot be parsed is audited, not silently dropped.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { consentValue } from "../../src/slack/blocks.js";
import { type FakeSlack, startFakeSlack } from "../fixtures/slack/fake-slack-api.js";
import { blockActionPayload, postSlackInteraction } from "../fixtures/slack/signed-request.js";
import { fixtureRegistryDoc } from "../integration/broker-harness.js";
import { until } from "../support/until.js";

const ALICE = "UALICE01";
const SECRET = `signing-secret-${randomBytes(8).toString("hex")}`;

let fake: FakeSlack;
let app: RunningApp;
let dir: string;
let thread: { teamId: string; channelId: string; threadTs: string };

/** The fixture registry with two more services: one for personal accounts only, one operator-only (shared). */
function registryDoc(): unknown {
  const doc = fixtureRegistryDoc() as { services: Record<string, Record<string, unknown>> };
  doc.services.personal = { ...doc.services.vendor, scopes: ["user"] };
  doc.services.team = { ...doc.services.vendor, scopes: ["shared"] };
  return doc;
}

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-clicks-"));
  fake = await startFakeSlack({ admins: [] });
  thread = { teamId: fake.teamId, channelId: "C0THREAD1", threadTs: "1700000000.000100" };
  fake.setMembers(thread.channelId, [ALICE]);
  const config = loadConfig({
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dir,
    PORT: "0",
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    SLAUDE_HOST_TOKENS: `host-token-${"x".repeat(32)}`,
    SLACK_BOT_TOKEN: fake.botToken,
    SLACK_SIGNING_SECRET: SECRET,
    SLACK_API_URL: fake.apiUrl,
    PATH: process.env.PATH ?? "",
  });
  app = await startApp({ config, registry: parseRegistry(registryDoc(), "test") });
});

afterEach(async () => {
  await app.close();
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Clicks `actionId` with `value` as Alice on a card in a DM, and returns the ephemeral answer's text. */
async function clickAndRead(actionId: string, value: string, id: string): Promise<string> {
  const r = await postSlackInteraction(
    `${app.url}/slack/events`,
    SECRET,
    blockActionPayload({
      userId: ALICE,
      teamId: thread.teamId,
      actionId,
      value,
      channelId: `D${ALICE}`,
      messageTs: "1700000000.000200",
      responseUrl: fake.responseUrl(id),
    }),
  );
  expect(r.status).toBe(200);
  const answer = await until(() => fake.responses.find((x) => x.id === id));
  return String((answer.body as { text?: string }).text);
}

describe("consent Continue when no link can be minted", () => {
  it("a personal-only service asked for from a thread says to use /connect, not 'only from the thread'", async () => {
    const text = await clickAndRead(
      "consent_accept",
      consentValue({ userId: ALICE, service: "personal", channelId: thread.channelId, threadTs: thread.threadTs }),
      "p",
    );
    expect(text).toContain("cannot be connected for a single thread");
    expect(text).toContain("/connect personal");
    expect(text).not.toContain("only be made from the thread");
  });

  it("an operator-only (shared) service says an admin sets it up", async () => {
    const text = await clickAndRead(
      "consent_accept",
      consentValue({ userId: ALICE, service: "team", channelId: thread.channelId, threadTs: null }),
      "t",
    );
    expect(text).toContain("set up by an operator");
    expect(text).not.toContain("only be made from the thread");
  });

  it("a link still mints when the scope fits", async () => {
    expect(
      await clickAndRead(
        "consent_accept",
        consentValue({ userId: ALICE, service: "personal", channelId: thread.channelId, threadTs: null }),
        "ok",
      ),
    ).toContain("Sign in");
    const minted = await app.store.audit.query({ event: "login_started" });
    expect(minted.map((a) => a.service)).toEqual(["personal"]);
  });
});

describe("approval clicks with an unparseable value", () => {
  it("are refused and audited as click_invalid", async () => {
    for (const [i, value] of ["not json", JSON.stringify({ a: "apr_x", n: "nonce", extra: 1 }), ""].entries()) {
      const text = await clickAndRead("approval_allow_once", value, `bad${i}`);
      expect(text).toBe("This request is not valid.");
    }
    const rows = await app.store.audit.query({ event: "approval_rejected_click" });
    expect(rows.map((r) => r.decision)).toEqual(["click_invalid", "click_invalid", "click_invalid"]);
    expect(rows.every((r) => r.actor === ALICE && r.teamId === thread.teamId)).toBe(true);
  });
});
