import canonicalizeExport from "canonicalize";
import { CodedError } from "./errors.js";

/** Why a value has no canonical JSON: it holds NaN, Infinity or a cycle (RFC 8785 has no form for them). */
export class CanonicalJsonError extends CodedError<"not_i_json"> {
  override readonly name = "CanonicalJsonError";
}

type Serialize = (input: unknown) => string | undefined;

// canonicalize 2.x is CommonJS with an ES-style .d.ts: Node hands us the function itself while tsc
// believes it is a namespace holding `default`. Either shape is accepted, checked once at load.
const serialize: Serialize = (() => {
  const m: unknown = canonicalizeExport;
  const f: unknown = typeof m === "function" ? m : (m as { default?: unknown }).default;
  if (typeof f !== "function") throw new Error("the canonicalize package exports no function");
  return f as Serialize;
})();

/**
 * RFC 8785 (JCS) canonical JSON through the `canonicalize` package: keys sorted by UTF-16 code units
 * at every level, ECMAScript number and string forms, undefined properties dropped. For every value
 * JSON.parse can return it is byte-identical to the encoding used before, so no hash changed at the
 * upgrade (a lone surrogate stays escaped, as JSON.stringify writes it). NaN and Infinity, which the
 * old encoding wrote as null, now throw CanonicalJsonError instead of hashing like null.
 */
export function canonicalJson(value: unknown): string {
  let out: string | undefined;
  try {
    out = serialize(value);
  } catch (cause) {
    throw new CanonicalJsonError(
      "not_i_json",
      "the value has no canonical JSON form (RFC 8785 needs valid Unicode and finite numbers)",
      { cause },
    );
  }
  // A bare undefined (or function) has no JSON at all; the old encoding wrote it as null.
  return out ?? "null";
}
