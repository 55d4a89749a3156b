import { afterEach, describe, expect, it } from "vitest";
import { CallService } from "../../src/broker/call.js";
import { ALICE, type Harness, makeHarness, THREAD } from "../integration/broker-harness.js";

// The decrypted-credential cache (issue 9 item 15) is bounded in count and age: it used to be a
// map cleared wholesale at 10,000 entries, with plaintext kept for as long as the process lived.
// Real parts: SQLite, the vault, vendor children through the pool.

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const threadOf = (n: number) => ({ ...THREAD, threadTs: `1700000000.00010${n}` });

describe("decrypted credential cache", () => {
  it("keeps at most `max` credentials and drops each after its TTL, decrypting again on the next call", async () => {
    h = await makeHarness();
    const calls = new CallService({ ...h.broker.deps, credentialCache: { max: 2, ttlMs: 60_000 } });
    for (const n of [1, 2, 3]) await h.connect(ALICE, { thread: threadOf(n) });
    const call = async (n: number) =>
      calls.call(
        { thread: threadOf(n), userId: ALICE },
        { service: "vendor", tool: "echo", args: { text: `t${n}` }, on_behalf_of: ALICE },
      );
    for (const n of [1, 2, 3]) expect((await call(n)).kind).toBe("ok");
    expect(calls.sessions.opened.size).toBe(2);

    h.clock.advance(60_001);
    calls.sessions.opened.sweepExpired();
    expect(calls.sessions.opened.size).toBe(0);
    // Expired plaintext is gone, the credential is not: the next call decrypts it again.
    expect((await call(3)).kind).toBe("ok");
    expect(calls.sessions.opened.size).toBe(1);
  });
});
