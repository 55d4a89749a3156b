/** The placeholder that replaces a credential value in anything shown to the model or a user. */
export const REDACTED = "[redacted]";

const REDACTED_BYTES = Buffer.from(REDACTED);
const MIN_SECRET_LENGTH = 4;
/** Shorter shifted-base64 cores would match ordinary text too often to be worth redacting. */
const MIN_CORE_LENGTH = 6;

/**
 * The base64 (and base64url) text that encodes `bytes` wherever they sit in a longer byte string:
 * one stable core per byte offset mod 3, without the characters that mix in neighbouring bytes.
 * base64("Bearer " + token) holds the offset-1 core of the token, for example.
 */
export function base64Cores(bytes: Buffer): string[] {
  const out: string[] = [];
  for (const shift of [0, 1, 2]) {
    const n = shift + bytes.length;
    const encoded = Buffer.concat([Buffer.alloc(shift), bytes]).toString("base64");
    // Characters 0..start-1 carry bits of the leading filler; the tail keeps only fully known characters.
    const core = encoded.slice([0, 2, 3][shift], Math.floor(n / 3) * 4 + (n % 3));
    if (core.length >= MIN_CORE_LENGTH) out.push(core, core.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  return out;
}

/**
 * Every form in which a credential value may come back from a vendor: the raw value, its
 * base64/base64url (also embedded at any byte offset), hex (lower and upper case), URL-encoding,
 * and the same forms of `a:b` pairs (HTTP Basic, e.g. email:token).
 */
export function secretVariants(
  values: readonly string[],
  extra: readonly string[] = [],
  companionsIn: readonly string[] = [],
): string[] {
  const raw = [...new Set([...values, ...extra].filter((v) => v.length >= MIN_SECRET_LENGTH))];
  const out = new Set<string>();
  const addForms = (v: string) => {
    out.add(v);
    out.add(encodeURIComponent(v));
    const b = Buffer.from(v);
    out.add(b.toString("base64"));
    out.add(b.toString("base64").replace(/=+$/, ""));
    out.add(b.toString("base64url"));
    out.add(JSON.stringify(v).slice(1, -1));
    out.add(b.toString("hex"));
    out.add(b.toString("hex").toUpperCase());
    for (const core of base64Cores(b)) out.add(core);
  };
  for (const v of raw) addForms(v);
  // Pairs include non-secret companions such as an email: base64("email:token") leaks the token.
  const companions = [...new Set([...values, ...extra, ...companionsIn].filter((v) => v.length > 0))];
  for (const a of companions)
    for (const b of raw)
      if (a !== b) {
        addForms(`${a}:${b}`);
        addForms(`${b}:${a}`);
      }
  return [...out].filter((v) => v.length >= MIN_SECRET_LENGTH).sort((x, y) => y.length - x.length);
}

/** One regular expression matching every variant, longest first at each position (none: matches nothing). */
function combinedMatcher(variants: readonly string[]): RegExp {
  if (variants.length === 0) return /(?!)/g;
  return new RegExp(variants.map((v) => v.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")).join("|"), "g");
}

/** A redactor for one connection's secrets: replaces every variant in strings, deeply. */
export class Redactor {
  private readonly variants: string[];
  /** Every credential form in one matcher: a text is scanned once, not once per form. */
  private readonly matcher: RegExp;
  /** `values`: secrets; `extra`: derived secret strings; `companions`: non-secret values that only leak in pairs (e.g. an email). */
  /**
   * The variants no other variant occurs in: a text holds some variant exactly when it holds one of
   * these. Finding out whether a text leaks is a few indexOf scans of them (the common answer, no),
   * which is twice as fast on a large text as the combined matcher that the replacement needs.
   */
  private readonly cores: string[];

  constructor(values: readonly string[], extra: readonly string[] = [], companions: readonly string[] = []) {
    this.variants = secretVariants(values, extra, companions);
    this.matcher = combinedMatcher(this.variants);
    this.cores = this.variants.filter((v) => !this.variants.some((o) => o !== v && v.includes(o)));
  }

  /** The longest variant's length: a text cut short may end in an unmatched part of a secret this long. */
  get reach(): number {
    return this.variants[0]?.length ?? 0;
  }

  /** Whether `text` contains any secret variant. */
  leaks(text: string): boolean {
    for (const core of this.cores) if (text.includes(core)) return true;
    return false;
  }

  /** `s` with every variant replaced; `s` itself (no copy) when none occurs, the common case. */
  text(s: string): string {
    let out = s;
    // Replacing can join the ends of two overlapping forms into a new one: repeat (bounded: a
    // "secret" inside the placeholder itself would otherwise match forever).
    for (let pass = 0; pass < 4 && this.leaks(out); pass++) out = out.replace(this.matcher, REDACTED);
    return out;
  }

  /** Replaces every secret variant inside raw bytes (a decoded blob); returns `buf` itself when nothing matched. */
  bytes(buf: Buffer): Buffer {
    let out = buf;
    for (const v of this.variants) {
      const needle = Buffer.from(v);
      let at = out.indexOf(needle);
      if (at < 0) continue;
      const parts: Buffer[] = [];
      let from = 0;
      for (; at >= 0; at = out.indexOf(needle, from)) {
        parts.push(out.subarray(from, at), REDACTED_BYTES);
        from = at + needle.length;
      }
      parts.push(out.subarray(from));
      out = Buffer.concat(parts);
    }
    return out;
  }

  /**
   * Redacts a base64 blob (image/audio `data`, `resource.blob`): decoded, its bytes redacted, and
   * re-encoded, so the answer is still valid base64. Text that is not plain base64 is redacted as text.
   */
  blob(b64: string): string {
    const compact = b64.replace(/\s+/g, "");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) return this.text(b64);
    const decoded = Buffer.from(compact, "base64");
    const clean = this.bytes(decoded);
    return clean === decoded ? b64 : clean.toString("base64");
  }

  /** Redacts every string (and object key) inside a JSON-like value; always a copy. */
  deep<T>(value: T): T {
    return this.walk(value) as T;
  }

  /**
   * Like `deep`, but copy-on-write: `value` itself when nothing in it holds a secret, so a caller
   * can tell by identity that the value is exactly what it was given (and copies nothing).
   */
  kept<T>(value: T): T {
    return this.keep(value) as T;
  }

  private keep(v: unknown): unknown {
    if (typeof v === "string") return this.text(v);
    if (Array.isArray(v)) {
      let out: unknown[] | undefined;
      for (let i = 0; i < v.length; i++) {
        const x = this.keep(v[i]);
        if (x !== v[i]) out ??= v.slice(0, i);
        out?.push(x);
      }
      return out ?? v;
    }
    if (v && typeof v === "object") {
      const entries = Object.entries(v);
      let changed = false;
      const next = entries.map(([k, x]): [string, unknown] => {
        const k2 = this.text(k);
        const x2 = this.keep(x);
        if (k2 !== k || x2 !== x) changed = true;
        return [k2, x2];
      });
      return changed ? Object.fromEntries(next) : v;
    }
    return v;
  }

  private walk(v: unknown): unknown {
    if (typeof v === "string") return this.text(v);
    if (Array.isArray(v)) return v.map((x) => this.walk(x));
    if (v && typeof v === "object") {
      // fromEntries defines each key as its own property: a vendor's "__proto__" key stays a key
      // (an assignment would set the copy's prototype instead, and the key would be gone).
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [this.text(k), this.walk(x)]));
    }
    return v;
  }
}
