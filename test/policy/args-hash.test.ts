import { describe, expect, it } from "vitest";
import { callHash, canonicalJson } from "../../src/policy/args-hash.js";

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
    const v = { "quote\"key": "line\nbreak", unicode: "é✓", n: -1.5e-7, t: true, f: false, z: null, nested: { e: [], o: {} } };
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
    expect(callHash("gitlab", "create_issue", { dryRun: false, issue: { labels: ["a", "b"], title: "T" }, project: "acme/web" })).toBe(h);
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
