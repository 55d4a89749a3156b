import { afterEach, describe, expect, it } from "vitest";
import { OAuthError } from "../../src/login/oauth/errors.js";
import { ALICE, type Harness, makeHarness, mcpCall, THREAD } from "../integration/broker-harness.js";

// How a failed OAuth refresh before a call is reported (issue 9 item 16): the verdict comes from the
// refresher's own error type, never from a `code` property any error may carry. The refresher is
// the broker's port; here a fake that fails the way it is told. Real SQLite, vault and MCP client.

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function callWithRefreshFailure(failure: Error) {
  h = await makeHarness({ refresher: { skewMs: 60_000, fresh: async () => Promise.reject(failure) } });
  await h.lifecycle.create({
    teamId: THREAD.teamId,
    ownerUserId: ALICE,
    service: "vendor",
    scope: "thread",
    channelId: THREAD.channelId,
    threadTs: THREAD.threadTs,
    // Expiring now: the call refreshes first.
    credential: {
      kind: "oauth",
      accessToken: "at-canary-0123456789",
      refreshToken: "rt-canary-0123456789",
      tokenType: "Bearer",
      expiresAt: h.clock.now() + 1_000,
    },
    createdBy: ALICE,
  });
  const s = await h.session();
  return mcpCall(s.client, { tool: "echo", args: { text: "x" }, on_behalf_of: ALICE });
}

describe("a failed refresh before a call", () => {
  it("an OAuthError needs_login is reported as connection_unusable (reconnect)", async () => {
    expect((await callWithRefreshFailure(new OAuthError("needs_login", "needs a new login"))).structured.code).toBe(
      "connection_unusable",
    );
  });

  it("a transient OAuthError is vendor_unreachable", async () => {
    expect(
      (await callWithRefreshFailure(new OAuthError("network", "token refresh: could not reach the IdP"))).structured
        .code,
    ).toBe("vendor_unreachable");
  });

  it("another error that merely carries code 'needs_login' is an internal error, not a revoked connection", async () => {
    const stray = Object.assign(new Error("SQLITE_IOERR while reading the row"), { code: "needs_login" });
    const r = await callWithRefreshFailure(stray);
    expect(r.structured.code).toBe("internal_error");
    expect(h!.log.lines.some((l) => l.includes("credential refresh failed unexpectedly"))).toBe(true);
  });
});
