import { describe, expect, it } from "vitest";
import { base64Cores, REDACTED, Redactor } from "../../src/hygiene/redact.js";

// The redactor against an independent oracle: instead of looking for the variants it knows, decode
// every base64 and hex run of its output at every alignment and look for the credential's bytes.

/** Whether `token` can be read back out of `text` by decoding any base64 or hex run at any alignment. */
function recoverable(text: string, token: string): boolean {
  if (text.includes(token)) return true;
  const needle = Buffer.from(token);
  for (const run of text.match(/[A-Za-z0-9+/_-]{4,}/g) ?? []) {
    const std = run.replace(/-/g, "+").replace(/_/g, "/");
    for (let i = 0; i < 4; i++) if (Buffer.from(std.slice(i), "base64").includes(needle)) return true;
  }
  for (const run of text.match(/[0-9a-fA-F]{2,}/g) ?? []) {
    for (let i = 0; i < 2; i++) if (Buffer.from(run.slice(i), "hex").includes(needle)) return true;
  }
  return false;
}

const TOKENS = [
  "glpat-Abc123xyz789",
  "sk_live_0123456789abcdefXYZ",
  "t0k3n!€",
  "abcdefgh",
  "canary-00ff11ee22dd33cc44bb55aa",
];
const PREFIXES = ["", "B", "xy", "Bearer ", "user@example.com:", "\u0000\u0001\u0002\u0003"];
const SUFFIXES = ["", "!", "\n\n", ";rest=1"];

describe("Redactor: encoded forms at any byte offset", () => {
  it("the oracle itself finds every planted form (so the assertions below can fail)", () => {
    for (const token of TOKENS) {
      for (const p of PREFIXES) {
        const plain = Buffer.from(`${p}${token}`);
        expect(recoverable(plain.toString("base64"), token), `${p}|${token}`).toBe(true);
        expect(recoverable(plain.toString("base64url"), token)).toBe(true);
        expect(recoverable(plain.toString("hex").toUpperCase(), token)).toBe(true);
      }
    }
  });

  it("base64 (offsets 0, 1, 2; standard and url-safe) and hex (lower, upper) of the credential inside longer data are redacted", () => {
    for (const token of TOKENS) {
      const r = new Redactor([token]);
      for (const p of PREFIXES) {
        for (const s of SUFFIXES) {
          const bytes = Buffer.from(`${p}${token}${s}`);
          for (const form of [
            bytes.toString("base64"),
            bytes.toString("base64url"),
            bytes.toString("hex"),
            bytes.toString("hex").toUpperCase(),
          ]) {
            const out = r.text(`before ${form} after`);
            expect(recoverable(out, token), `${JSON.stringify(p)} ${JSON.stringify(s)} ${form}`).toBe(false);
            expect(out).toContain(REDACTED);
          }
        }
      }
    }
  });

  it("base64('Bearer ' + token) and base64 of user:token pairs are redacted", () => {
    const token = "glpat-Zz9Yy8Xx7Ww6Vv5";
    const r = new Redactor([token], [], ["alice@example.com"]);
    const out = r.text(
      `auth ${Buffer.from(`Bearer ${token}`).toString("base64")} basic ${Buffer.from(`alice@example.com:${token}`).toString("base64")}`,
    );
    expect(recoverable(out, token)).toBe(false);
  });

  it("a blob is decoded, redacted and re-encoded: still valid base64, the credential gone, other bytes kept", () => {
    const token = "sk_live_0123456789abcdefXYZ";
    const r = new Redactor([token]);
    for (const p of PREFIXES) {
      const head = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff]);
      const blob = Buffer.concat([head, Buffer.from(`${p}${token}`), Buffer.from([0xfe, 0x00])]).toString("base64");
      const out = r.blob(blob);
      expect(() => atob(out)).not.toThrow();
      const decoded = Buffer.from(out, "base64");
      expect(decoded.includes(Buffer.from(token))).toBe(false);
      expect(decoded.subarray(0, 6)).toEqual(head);
      expect(decoded.includes(Buffer.from(REDACTED))).toBe(true);
    }
    // Nothing to redact: the very same string comes back.
    const clean = Buffer.from("just an image").toString("base64");
    expect(r.blob(clean)).toBe(clean);
    expect(r.blob(Buffer.from(token).toString("base64"))).toBe(Buffer.from(REDACTED).toString("base64"));
  });

  it("cores shorter than six characters are not produced (they would hit ordinary text)", () => {
    expect(base64Cores(Buffer.from("abcd")).every((c) => c.length >= 6)).toBe(true);
    expect(new Redactor(["abcd"]).text("plain words stay: YWJj and abc")).toBe("plain words stay: YWJj and abc");
  });
});

describe("Redactor: the leak check finds every form the replacement removes", () => {
  it("every variant, alone or inside other text, is found by leaks() and removed by text(); clean text is left as is", () => {
    const secret = "tok_0123456789abcdefABCDEF";
    const r = new Redactor([secret, "hunter22"], [`Bearer ${secret}`], ["alice@example.com"]);
    const forms = [
      secret,
      encodeURIComponent(`alice@example.com:${secret}`),
      Buffer.from(`Bearer ${secret}`).toString("base64"),
      Buffer.from(`x${secret}`).toString("base64url"),
      Buffer.from("hunter22").toString("hex").toUpperCase(),
      JSON.stringify(`alice@example.com:hunter22`).slice(1, -1),
    ];
    for (const f of forms) {
      const text = `before ${f} after`;
      expect(r.leaks(text)).toBe(true);
      const clean = r.text(text);
      expect(clean).toContain(REDACTED);
      expect(r.leaks(clean)).toBe(false);
    }
    const plain = "nothing secret here\n".repeat(50);
    expect(r.leaks(plain)).toBe(false);
    expect(r.text(plain)).toBe(plain);
  });
});

describe("Redactor: a key named __proto__ is a key", () => {
  it("deep() and kept() keep it as an own key and never set the copy's prototype from it", () => {
    const r = new Redactor(["tok_0123456789abcdef"]);
    for (const text of ['{"__proto__":""}', '{"__proto__":{"polluted":"tok_0123456789abcdef"},"a":1}']) {
      const value = JSON.parse(text) as Record<string, unknown>;
      for (const out of [r.deep(value), r.kept(value)] as Record<string, unknown>[]) {
        expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
        expect(Object.keys(out)).toEqual(Object.keys(value));
        expect("polluted" in out).toBe(false);
        expect(JSON.stringify(out)).not.toContain("tok_0123456789abcdef");
      }
    }
    expect(JSON.stringify(r.deep(JSON.parse('{"__proto__":""}')))).toBe('{"__proto__":""}');
  });
});
