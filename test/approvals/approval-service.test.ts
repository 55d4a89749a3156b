// ApprovalService over a real SQLite store and a ManualClock: the approval timeout is armed on the
// injected clock, so expiry happens when the test moves time past it, never in real time.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ApprovalSubject } from "../../src/approvals/approval-records.js";
import { ApprovalService, type WaitOutcome } from "../../src/approvals/approval-service.js";
import { type ApprovalCard, cardFacts } from "../../src/approvals/card.js";
import type { ApprovalChannel, ApprovalOutcome } from "../../src/approvals/channel.js";
import { Redactor } from "../../src/hygiene/redact.js";
import type { Approval } from "../../src/store/records.js";
import { harness, TempDirs, threadInput } from "../support/foundation.js";

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

const ALICE = "UALICE01";
const BOB = "UBOB0002";
const THREAD = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };
const TIMEOUT_MS = 120_000;

/** An approval channel that records what it was asked and told (the Slack side is not under test). */
class RecordingChannel implements ApprovalChannel {
  readonly available = true;
  readonly asked: Approval[] = [];
  readonly settledWith: [string, ApprovalOutcome][] = [];
  async ask(approval: Approval): Promise<void> {
    this.asked.push(approval);
  }
  async settled(approval: Approval, outcome: ApprovalOutcome): Promise<void> {
    this.settledWith.push([approval.id, outcome]);
  }
}

async function setup() {
  const h = harness(tmp);
  const channel = new RecordingChannel();
  const service = new ApprovalService({ store: h.store, channel, clock: h.clock, log: h.log, timeoutMs: TIMEOUT_MS });
  const conn = await h.lifecycle.create(threadInput(ALICE, "canary-token"));
  const subject: ApprovalSubject = {
    thread: THREAD,
    connectionId: conn.id,
    ownerUserId: ALICE,
    borrowerUserId: BOB,
    service: "svc",
    tool: "read_item",
    argsHash: "a".repeat(64),
  };
  const card: Omit<ApprovalCard, "expiresAt"> = {
    borrowerUserId: BOB,
    ownerUserId: ALICE,
    service: "svc",
    serviceDisplayName: "Svc",
    tool: "read_item",
    write: false,
    reason: "no_grant",
    ...cardFacts({ id: "1" }, new Redactor([]), false),
    ...THREAD,
  };
  /** Starts a borrow that waits for ALICE; resolves once her card is shown. */
  const ask = async (signal?: AbortSignal) => {
    let outcome: WaitOutcome | undefined;
    const before = channel.asked.length;
    const waiting = service.requestAndWait(subject, card, signal).then((o) => (outcome = o));
    await expect.poll(() => channel.asked.length).toBe(before + 1);
    return { approval: channel.asked[before]!, waiting, outcome: () => outcome };
  };
  return { h, channel, service, ask };
}

describe("approval timeouts on the injected clock", () => {
  it("a waiting call expires exactly when the clock passes the timeout: the row, its audit and the card say expired", async () => {
    const { h, channel, service, ask } = await setup();
    const a = await ask();
    expect(a.approval.expiresAt).toBe(h.clock.now() + TIMEOUT_MS);
    expect(service.pendingCount).toBe(1);

    await h.clock.advanceAsync(TIMEOUT_MS - 1);
    expect(a.outcome()).toBeUndefined();
    expect((await h.store.approvals.get(a.approval.id))?.status).toBe("pending");

    await h.clock.advanceAsync(1);
    await vi.waitFor(() => expect(a.outcome()).toEqual({ kind: "expired" }), { timeout: 5_000 });
    expect(service.pendingCount).toBe(0);
    expect((await h.store.approvals.get(a.approval.id))?.status).toBe("expired");
    expect((await h.store.audit.query({ event: "approval_decided" })).map((r) => r.decision)).toEqual(["expired"]);
    expect(channel.settledWith).toEqual([[a.approval.id, "expired"]]);
    // The owner's click after the expiry applies to nothing.
    expect(await service.decide(a.approval.id, a.approval.nonce, ALICE, "allowed_thread")).toBe("expired");
    expect(h.clock.pendingTimers()).toBe(0);
  });

  it("expireDue (the leader's approval-expiry job) expires an approval whose caller waits elsewhere only at its expiry, once, and settles its card", async () => {
    const { h, channel, service, ask } = await setup();
    // The leader is another process on the same database: it never saw the call.
    const leaderChannel = new RecordingChannel();
    const leader = new ApprovalService({
      store: h.store,
      channel: leaderChannel,
      clock: h.clock,
      log: h.log,
      timeoutMs: TIMEOUT_MS,
    });
    const a = await ask();
    expect(await leader.expireDue()).toBe(0);
    // Time passes without the asker's timer firing (the asker's replica is dead).
    h.clock.set(a.approval.expiresAt);
    expect(await leader.expireDue()).toBe(1);
    expect(await leader.expireDue()).toBe(0);
    expect((await h.store.approvals.get(a.approval.id))?.status).toBe("expired");
    expect(leaderChannel.settledWith).toEqual([[a.approval.id, "expired"]]);
    // Were the asker alive after all, its own timeout finds the row already expired: no second audit row or card update.
    await h.clock.advanceAsync(0);
    await vi.waitFor(() => expect(a.outcome()).toEqual({ kind: "expired" }), { timeout: 5_000 });
    expect((await h.store.audit.query({ event: "approval_decided" })).map((r) => r.decision)).toEqual(["expired"]);
    expect(channel.settledWith).toEqual([]);
    expect(service.pendingCount).toBe(0);
  });

  it("a decision before the timeout disarms its timer: moving the clock on changes nothing", async () => {
    const { h, channel, service, ask } = await setup();
    const a = await ask();
    await h.clock.advanceAsync(TIMEOUT_MS / 2);
    expect(await service.decide(a.approval.id, a.approval.nonce, ALICE, "allowed_once")).toBe("applied");
    await a.waiting;
    expect(a.outcome()).toMatchObject({ kind: "allowed_once" });
    expect(h.clock.pendingTimers()).toBe(0);
    await h.clock.advanceAsync(TIMEOUT_MS);
    expect((await h.store.approvals.get(a.approval.id))?.status).toBe("allowed_once");
    expect(channel.settledWith).toEqual([[a.approval.id, "allowed_once"]]);
  });

  it("a cancelled wait (the host gave up) disarms its timer and expires the approval at once", async () => {
    const { h, service, ask } = await setup();
    const abort = new AbortController();
    const a = await ask(abort.signal);
    abort.abort();
    await a.waiting;
    expect(a.outcome()).toEqual({ kind: "cancelled" });
    expect(h.clock.pendingTimers()).toBe(0);
    expect((await h.store.approvals.get(a.approval.id))?.status).toBe("expired");
    expect(service.pendingCount).toBe(0);
  });
});
