/** The placeholder that replaces a credential value in anything shown to the model or a user. */
export const REDACTED = "[redacted]";

const MIN_SECRET_LENGTH = 4;

/**
 * Every form in which a credential value may come back from a vendor: the raw value, its
 * base64/base64url, URL-encoding, and base64 of `a:b` pairs (HTTP Basic, e.g. email:token).
 */
export function secretVariants(values: readonly string[], extra: readonly string[] = [], companionsIn: readonly string[] = []): string[] {
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
  };
  for (const v of raw) addForms(v);
  // Pairs include non-secret companions such as an email: base64("email:token") leaks the token.
  const companions = [...new Set([...values, ...extra, ...companionsIn].filter((v) => v.length > 0))];
  for (const a of companions) for (const b of raw) if (a !== b) addForms(`${a}:${b}`), addForms(`${b}:${a}`);
  return [...out].filter((v) => v.length >= MIN_SECRET_LENGTH).sort((x, y) => y.length - x.length);
}

/** A redactor for one connection's secrets: replaces every variant in strings, deeply. */
export class Redactor {
  private readonly variants: string[];
  /** `values`: secrets; `extra`: derived secret strings; `companions`: non-secret values that only leak in pairs (e.g. an email). */
  constructor(values: readonly string[], extra: readonly string[] = [], companions: readonly string[] = []) {
    this.variants = secretVariants(values, extra, companions);
  }

  /** Whether `text` contains any secret variant. */
  leaks(text: string): boolean {
    return this.variants.some((v) => text.includes(v));
  }

  text(s: string): string {
    let out = s;
    for (const v of this.variants) if (out.includes(v)) out = out.split(v).join(REDACTED);
    return out;
  }

  /** Redacts every string (and object key) inside a JSON-like value. */
  deep<T>(value: T): T {
    return this.walk(value) as T;
  }

  private walk(v: unknown): unknown {
    if (typeof v === "string") return this.text(v);
    if (Array.isArray(v)) return v.map((x) => this.walk(x));
    if (v && typeof v === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[this.text(k)] = this.walk(x);
      return out;
    }
    return v;
  }
}
