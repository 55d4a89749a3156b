import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/clock/clock.js";
import { refresh } from "../../../src/login/oauth/token-client.js";
import { oauthError } from "./support.js";

// The guarded fetch every SDK call goes through: its timeout runs on the injected clock, and a
// body is read no further than the size cap.

const req = { tokenEndpoint: "https://auth.example.com/token", clientId: "c", refreshToken: "rt1" };

describe("the guarded fetch under the SDK", () => {
  it("times out on the injected clock, not on wall time, and disarms its timer when done", async () => {
    const clock = new ManualClock();
    let aborted = false;
    const hanging: typeof fetch = (_url, init) =>
      new Promise((_resolve, reject) => {
        init?.signal?.addEventListener("abort", () => {
          aborted = true;
          reject(new DOMException("The operation was aborted", "AbortError"));
        });
      });
    // Far beyond the test timeout in wall time: only the manual clock can end it.
    const p = oauthError(refresh(req, { clock, fetch: hanging, timeoutMs: 120_000 }));
    await clock.advanceAsync(119_999);
    expect(aborted).toBe(false);
    await clock.advanceAsync(1);
    expect((await p).code).toBe("network");
    expect(aborted).toBe(true);

    const ok: typeof fetch = async () => Response.json({ access_token: "at2", token_type: "Bearer", expires_in: 60 });
    await refresh(req, { clock, fetch: ok });
    expect(clock.pendingTimers()).toBe(0);
  });

  it("stops reading a body without a length as soon as it passes the 256 KiB cap", async () => {
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    let pulls = 0;
    let cancelled = false;
    const endless: typeof fetch = async () =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull(c) {
            pulls++;
            if (pulls > 16) c.close();
            else c.enqueue(chunk);
          },
          cancel() {
            cancelled = true;
          },
        }),
        { status: 200, headers: { "content-type": "application/json" } },
      );
    const err = await oauthError(refresh(req, { clock: new ManualClock(), fetch: endless }));
    expect(err.code).toBe("invalid_response");
    expect(err.message).toContain("too large");
    expect(cancelled).toBe(true);
    // 256 KiB is four chunks; the fifth crosses the cap (the stream may have queued one more).
    expect(pulls).toBeLessThanOrEqual(6);
  });
});
