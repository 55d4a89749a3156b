import { describe, expect, it } from "vitest";
import { CARD_LIMITS, type CardArgument, cardArguments, cardFacts } from "../../src/approvals/card.js";
import { Redactor } from "../../src/hygiene/redact.js";

// The card model: every argument exactly as the vendor will receive it, or a card that says it
// cannot and offers only Deny. Renderers (Slack now, HTML later) show these facts and nothing else.

const none = new Redactor([]);

function shown(args: Record<string, unknown>, redactor = none): CardArgument[] {
  const a = cardArguments(args, redactor);
  if (a.shown === "too_large") throw new Error("unexpectedly too large");
  return [...a.args];
}

describe("card arguments", () => {
  it("shows every argument, past the eighth and past 120 characters, exactly", () => {
    const long = `cd /srv/app && ${"echo keep-this-part && ".repeat(12)}rm -rf /srv/app/data --no-preserve-root`;
    const args: Record<string, unknown> = { command: long };
    for (let i = 1; i <= 11; i++) args[`arg${i}`] = `value ${i}`;
    const out = shown(args);
    expect(out).toHaveLength(12);
    expect(out[0]).toEqual({ name: "command", type: "string", text: long, escaped: false, redacted: false });
    expect(out.at(-1)).toEqual({ name: "arg11", type: "string", text: "value 11", escaped: false, redacted: false });
    expect(cardFacts(args, none, false).keyArgs.map(([k]) => k)).toEqual(Object.keys(args));
  });

  it('keeps newlines and whitespace as they are and types every value, so "2" and 2 differ', () => {
    const out = shown({
      script: "line 1\n\tline  2\n",
      s: "2",
      n: 2,
      b: false,
      z: null,
      list: [1, "a"],
      obj: { k: { deep: true } },
    });
    expect(out.map((a) => [a.name, a.type, a.text])).toEqual([
      ["script", "string", "line 1\n\tline  2\n"],
      ["s", "string", "2"],
      ["n", "number", "2"],
      ["b", "boolean", "false"],
      ["z", "null", "null"],
      ["list", "array", JSON.stringify([1, "a"], null, 2)],
      ["obj", "object", JSON.stringify({ k: { deep: true } }, null, 2)],
    ]);
  });

  it("deep nesting is shown as compact JSON (indenting it would grow quadratically), still exact", () => {
    let deep: unknown = "core";
    for (let i = 0; i < 1_000; i++) deep = [deep];
    const [a] = shown({ deep, shallow: { a: [1] } });
    expect(a?.text).toBe(JSON.stringify(deep));
    expect(JSON.stringify(JSON.parse(a!.text))).toBe(JSON.stringify(deep));
  });

  it("writes invisible, control and bidi characters as \\u escapes: unambiguous and still exact JSON", () => {
    const hostile = ["ls \u202E/ fr- mr", "a\u200Bb", "x\u0085y", "cr\rhere", "tag\u{E0041}", "sep\u2028x"];
    for (const value of hostile) {
      const [a] = shown({ v: value });
      expect(a?.escaped, value).toBe(true);
      expect(a?.text, value).toMatch(/^"[\x20-\x7E]*"$/);
      expect(JSON.parse(a!.text), value).toBe(value);
    }
    const [nested] = shown({ o: { k: "rtl\u202Eevil" } });
    expect(nested?.escaped).toBe(true);
    expect(nested?.text).not.toContain("\u202E");
    expect(JSON.parse(nested!.text)).toEqual({ k: "rtl\u202Eevil" });
    const [name] = shown({ "na\u202Eme": 1 });
    expect(name?.name).toBe('"na\\u202Eme"');
  });

  it("hides the owner's credential in any form, marks it, and offers only Deny", () => {
    const token = `tok-${"s3cr3t".repeat(4)}`;
    const redactor = new Redactor([token]);
    const facts = cardFacts(
      { id: "1", note: `please send ${token}`, b64: Buffer.from(token).toString("base64") },
      redactor,
      false,
    );
    expect(facts.args.shown).toBe("redacted");
    expect(JSON.stringify(facts)).not.toContain(token);
    expect(JSON.stringify(facts)).not.toContain(Buffer.from(token).toString("base64"));
    expect(facts.decisions).toEqual(["denied"]);
    if (facts.args.shown === "too_large") throw new Error("unreachable");
    expect(facts.args.args.map((a) => a.redacted)).toEqual([false, true, true]);
  });

  it("a name that merely sounds secret is shown: only the owner's credential is hidden", () => {
    const facts = cardFacts({ page_token: "abc", password: "new-user-pw" }, none, false);
    expect(facts.keyArgs).toEqual([
      ["page_token", "abc"],
      ["password", "new-user-pw"],
    ]);
    expect(facts.decisions).toEqual(["allowed_thread", "allowed_once", "denied"]);
  });

  it("past the card limits shows only the size and offers only Deny", () => {
    const many: Record<string, unknown> = {};
    for (let i = 0; i < CARD_LIMITS.maxArgs; i++) many[`a${i}`] = i;
    expect(cardArguments(many, none).shown).toBe("complete");
    many.one_more = 1;
    expect(cardArguments(many, none)).toMatchObject({ shown: "too_large", count: CARD_LIMITS.maxArgs + 1 });

    const big = { v: "x".repeat(CARD_LIMITS.maxChars - 1) };
    expect(cardArguments(big, none).shown).toBe("complete");
    const facts = cardFacts({ v: "x".repeat(CARD_LIMITS.maxChars) }, none, true);
    expect(facts.args).toEqual({ shown: "too_large", count: 1, chars: CARD_LIMITS.maxChars + 1 });
    expect(facts.keyArgs).toEqual([]);
    expect(facts.decisions).toEqual(["denied"]);
  });

  it("a write offers Just once and Deny; a read also Allow for thread", () => {
    expect(cardFacts({ id: "1" }, none, true).decisions).toEqual(["allowed_once", "denied"]);
    expect(cardFacts({}, none, false).decisions).toEqual(["allowed_thread", "allowed_once", "denied"]);
  });
});
