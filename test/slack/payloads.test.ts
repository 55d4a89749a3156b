import { describe, expect, it } from "vitest";
import * as p from "../../src/slack/payloads.js";
import {
  appHomeOpenedEvent,
  blockActionPayload,
  messageEvent,
  slashCommand,
} from "../fixtures/slack/signed-request.js";

// The Slack listeners parse what they read (src/slack/payloads.ts) instead of casting it: payloads
// shaped as Slack sends them parse, and a field of the wrong type or shape is refused, so a handler
// never acts on a user id that is an object or a team id that is a number.

const ids = { teamId: "T0FAKETEAM" };

describe("Slack payload schemas", () => {
  it("accept payloads as Slack sends them (the fixtures' builders)", () => {
    const click = blockActionPayload({
      userId: "UALICE01",
      teamId: ids.teamId,
      actionId: "approval_deny",
      value: "{}",
      channelId: "DUALICE01",
      messageTs: "1700000000.000200",
      responseUrl: "http://127.0.0.1:9/r",
    });
    const body = p.blockActionBody.parse(click);
    expect(body.user.id).toBe("UALICE01");
    expect(body.team?.id).toBe(ids.teamId);
    expect(p.buttonAction.parse((click as { actions: unknown[] }).actions[0]).action_id).toBe("approval_deny");
    const msg = messageEvent({
      ...ids,
      channelId: "C0THREAD1",
      user: "UBOB0002",
      text: "hi",
      threadTs: "1700000000.000100",
    });
    expect(p.eventEnvelope.parse(msg).team_id).toBe(ids.teamId);
    expect(p.messageEvent.parse((msg as { event: unknown }).event)).toMatchObject({
      user: "UBOB0002",
      channel: "C0THREAD1",
      thread_ts: "1700000000.000100",
    });
    const home = appHomeOpenedEvent({ ...ids, userId: "UALICE01" });
    expect(p.homeOpenedEvent.parse((home as { event: unknown }).event).user).toBe("UALICE01");
    expect(
      p.slashCommand.parse(
        slashCommand({
          teamId: ids.teamId,
          channelId: "C0THREAD1",
          userId: "UALICE01",
          command: "/connect",
          text: "vendor",
        }),
      ).text,
    ).toBe("vendor");
  });

  it("refuse fields of the wrong type or shape", () => {
    expect(p.blockActionBody.safeParse({ user: { id: { forged: true } }, team: { id: ids.teamId } }).success).toBe(
      false,
    );
    expect(p.blockActionBody.safeParse({ user: { id: "UALICE01" }, team: { id: 42 } }).success).toBe(false);
    expect(p.blockActionBody.safeParse({ user: { id: "UALICE01" }, response_url: "not a url" }).success).toBe(false);
    expect(p.buttonAction.safeParse({ action_id: "approval_deny", value: { a: 1 } }).success).toBe(false);
    expect(p.messageEvent.safeParse({ user: ["UBOB0002"], channel: "C1X", ts: "1700000000.000100" }).success).toBe(
      false,
    );
    expect(p.messageEvent.safeParse({ user: "UBOB0002", channel: "C1X", ts: "yesterday" }).success).toBe(false);
    expect(p.slashCommand.safeParse({ text: "x", user_id: "UALICE01", channel_id: "C1X" }).success).toBe(false);
    expect(p.memberChangeEvent.safeParse({ channel: null }).success).toBe(false);
  });

  it("our own button values are strict JSON: extra keys, other types and non-JSON are undefined", () => {
    expect(p.parseJsonValue(p.approvalValue, JSON.stringify({ a: "appr_1", n: "n1" }))).toEqual({
      a: "appr_1",
      n: "n1",
    });
    for (const raw of [
      undefined,
      "",
      "not json",
      JSON.stringify({ a: "appr_1", n: "n1", extra: 1 }),
      JSON.stringify({ a: 1, n: "n1" }),
      "null",
    ]) {
      expect(p.parseJsonValue(p.approvalValue, raw)).toBeUndefined();
    }
    expect(p.idValue.safeParse("conn_abcdefgh12").success).toBe(true);
    expect(p.idValue.safeParse("conn_../../x").success).toBe(false);
  });
});
