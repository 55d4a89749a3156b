import { afterEach, describe, expect, it } from "vitest";
import { ALICE, type Harness, makeHarness } from "../integration/broker-harness.js";

// The `connect` tool when the consent card cannot be delivered (issue 9 item 16): its own code,
// not approval_unavailable (no approval was involved). The consent port is a fake that fails.

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("connect when the consent card cannot be delivered", () => {
  it("answers consent_unavailable with its own message, and a delivered card still answers consent_sent", async () => {
    const sent: string[] = [];
    let slackUp = false;
    h = await makeHarness({
      consent: {
        sendConsent: async (_thread, userId, service) => {
          if (!slackUp) throw new Error("slack api unreachable: connect ECONNREFUSED 127.0.0.1:9");
          sent.push(`${userId}:${service}`);
        },
      },
    });
    const s = await h.session();
    const failed = await s.client.callTool({ name: "connect", arguments: { service: "vendor" } });
    const sc = failed.structuredContent as { status: string; code: string; message: string };
    expect(failed.isError).toBe(true);
    expect(sc.status).toBe("refused");
    expect(sc.code).toBe("consent_unavailable");
    expect(sc.message).toContain("could not be delivered");
    expect(sc.message).not.toContain("approval");
    // The transport error stays in the log, never in the answer.
    expect(sc.message).not.toContain("ECONNREFUSED");

    slackUp = true;
    const ok = await s.client.callTool({ name: "connect", arguments: { service: "vendor" } });
    expect((ok.structuredContent as { status: string }).status).toBe("consent_sent");
    expect(sent).toEqual([`${ALICE}:vendor`]);
  });
});
