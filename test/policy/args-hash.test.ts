import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CanonicalJsonError, canonicalJson } from "../../src/domain/canonical-json.js";
import { callHash } from "../../src/policy/args-hash.js";

// The hash an approval is bound to: the same call must hash the same whatever the key order, and
// any change to what would be forwarded must change it.

describe("canonicalJson", () => {
  it("does not depend on key order, at any depth", () => {
    const a = { b: 1, a: { y: [1, { q: 1, p: 2 }], x: "s" }, c: null };
    const b = { c: null, a: { x: "s", y: [1, { p: 2, q: 1 }] }, b: 1 };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    expect(canonicalJson(a)).toBe('{"a":{"x":"s","y":[1,{"p":2,"q":1}]},"b":1,"c":null}');
  });

  it("keeps array order", () => {
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
    expect(canonicalJson({ a: [{ x: 1 }, { x: 2 }] })).not.toBe(canonicalJson({ a: [{ x: 2 }, { x: 1 }] }));
  });

  it("is valid JSON that parses back to the same value", () => {
    const v = {
      'quote"key': "line\nbreak",
      unicode: "é✓",
      n: -1.5e-7,
      t: true,
      f: false,
      z: null,
      nested: { e: [], o: {} },
    };
    expect(JSON.parse(canonicalJson(v))).toEqual(v);
  });

  it("tells apart values JSON would confuse by type", () => {
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: "1" }));
    expect(canonicalJson({ a: null })).not.toBe(canonicalJson({ a: "null" }));
    expect(canonicalJson({ a: [] })).not.toBe(canonicalJson({ a: {} }));
    expect(canonicalJson({ a: true })).not.toBe(canonicalJson({ a: "true" }));
  });

  it("drops undefined properties, as the JSON sent to the vendor does", () => {
    expect(canonicalJson({ a: 1, b: undefined })).toBe(canonicalJson({ a: 1 }));
  });
});

describe("callHash", () => {
  const args = { project: "acme/web", issue: { title: "T", labels: ["a", "b"] }, dryRun: false };
  const h = callHash("gitlab", "create_issue", args);

  it("is a SHA-256 hex digest, stable across key order", () => {
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(
      callHash("gitlab", "create_issue", {
        dryRun: false,
        issue: { labels: ["a", "b"], title: "T" },
        project: "acme/web",
      }),
    ).toBe(h);
  });

  it("changes when the service, the tool or any argument changes", () => {
    const variants: [string, string, unknown][] = [
      ["github", "create_issue", args],
      ["gitlab", "create_issues", args],
      ["gitlab", "create_issue", { ...args, project: "acme/api" }],
      ["gitlab", "create_issue", { ...args, dryRun: true }],
      ["gitlab", "create_issue", { ...args, issue: { ...args.issue, title: "T " } }],
      ["gitlab", "create_issue", { ...args, issue: { ...args.issue, labels: ["b", "a"] } }],
      ["gitlab", "create_issue", { ...args, issue: { ...args.issue, labels: ["a"] } }],
      ["gitlab", "create_issue", { ...args, extra: 1 }],
      ["gitlab", "create_issue", { project: "acme/web", issue: args.issue }],
      ["gitlab", "create_issue", {}],
    ];
    const hashes = variants.map(([s, t, a]) => callHash(s, t, a));
    for (const x of hashes) expect(x).not.toBe(h);
    expect(new Set(hashes).size).toBe(hashes.length);
  });

  it("cannot be confused by moving text between service, tool and arguments", () => {
    expect(callHash("a", "bc", {})).not.toBe(callHash("ab", "c", {}));
    expect(callHash("svc", "tool", { x: "y" })).not.toBe(callHash("svc", 'tool","args":{"x":"y"}', {}));
  });
});

// The encoding before RFC 8785 (canonicalize) replaced it, kept here as the oracle that proves an
// upgrade changes no hash of a JSON value an approval could have been asked for.
function v1Json(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(v1Json).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v1Json(v)}`).join(",")}}`;
}

describe("RFC 8785 canonical JSON (canonicalize)", () => {
  it("is byte-identical to the previous encoding for every JSON value (no approval's hash changes at upgrade)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(canonicalJson(v)).toBe(v1Json(v));
      }),
      { numRuns: 500 },
    );
    for (const v of [
      { é: 1, e: 2, "\u{1F600}": 3, "\uFB33": 4 },
      [1e21, 1e-7, -0, 0.1 + 0.2, 2 ** 53],
      "\u2028\u0000\u007f",
    ])
      expect(canonicalJson(v)).toBe(v1Json(v));
  });

  it("matches the RFC 8785 sample's number forms and key order", () => {
    // biome-ignore-start lint/correctness/noPrecisionLoss: RFC 8785's own test vector, written as the RFC prints it
    expect(
      canonicalJson({
        numbers: [333333333.33333329, 1e30, 4.5, 2e-3, 0.000000000000000000000000001],
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "1": "One",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
      }),
    ).toBe(
      '{"\\r":"Carriage Return","1":"One","numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"\u0080":"Control","ö":"Latin Small Letter O With Diaeresis","€":"Euro Sign"}',
      // biome-ignore-end lint/correctness/noPrecisionLoss: RFC 8785's own test vector, written as the RFC prints it
    );
  });

  it("refuses numbers with no JSON form instead of hashing them like null", () => {
    // Before: NaN and Infinity were written as null, so { a: NaN } hashed the same as { a: null }.
    for (const bad of [{ a: NaN }, { a: Infinity }, [1, -Infinity]]) {
      expect(() => canonicalJson(bad)).toThrow(CanonicalJsonError);
      expect(() => callHash("svc", "tool", bad)).toThrow(expect.objectContaining({ code: "not_i_json" }));
    }
    expect(callHash("svc", "tool", { a: null })).toMatch(/^[0-9a-f]{64}$/);
  });

  it("keeps a lone surrogate apart from every other string (escaped, as before)", () => {
    const lone = { a: "\uD800", "\uDC00": 1 };
    expect(canonicalJson(lone)).toBe(v1Json(lone));
    const hashes = ["\uD800", "\uFFFD", "?", "\\uD800", "\uD800\uDC00"].map((a) => callHash("svc", "tool", { a }));
    expect(new Set(hashes).size).toBe(hashes.length);
  });
});
