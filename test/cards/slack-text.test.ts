import { describe, expect, it } from "vitest";
import { slackTextLine } from "../../src/cards/slack-text.js";
import { plainLine } from "../../src/domain/card.js";

// The broker's Slack text read into card spans for a surface that is not Slack: no Slack markup
// survives, a mention becomes a user span (written as a name by the renderer), escapes are undone.

const names = (id: string) => ({ UALICE: "Alice", C_GENERAL: "general" })[id] ?? id;

describe("Slack text as card spans", () => {
  it("reads mentions, channels, special mentions, links and escapes", () => {
    const line = slackTextLine(
      "I've sent <@UALICE> a card in <#C_GENERAL|general>; <!here> see <https://x.test/a|the docs> &lt;b&gt; &amp; more",
    );
    expect(line).toContainEqual({ kind: "user", userId: "UALICE" });
    expect(line).toContainEqual({ kind: "channel", channelId: "C_GENERAL" });
    expect(plainLine(line, names)).toBe("I've sent @Alice a card in #general; @here see the docs <b> & more");
  });

  it("leaves no Slack markup in any reading", () => {
    for (const text of [
      "[Ran on <@UALICE>'s demo account with their approval.]",
      "<!channel> <!subteam^S1|@devs> <!date^1700000000^{date}|Nov 14>",
      "plain <@UBOB|bob>",
    ]) {
      expect(plainLine(slackTextLine(text), names)).not.toMatch(/<[@#!][^>]*>/);
    }
    expect(plainLine(slackTextLine("<!subteam^S1|@devs> and <!date^1^{date}|Nov 14>"))).toBe("@devs and Nov 14");
  });

  it("keeps text that is no Slack token as it is", () => {
    expect(plainLine(slackTextLine("a < b and c > d"))).toBe("a < b and c > d");
  });
});
