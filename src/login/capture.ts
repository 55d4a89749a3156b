// The capture strategies' checks, apart from the flow that drives them: what a paste form yields
// and what a browser's cookies store. Pure functions of the service's capture block.
import type { Service } from "../config/registry.js";
import type { CredentialInput } from "../vault/credential.js";
import type { LoginBrowser } from "./ports.js";

type BrowserCookie = Awaited<ReturnType<LoginBrowser["cookies"]>>[number];

/** The paste form's values for `service`, or the message telling the user what is wrong. */
export function pastedCredential(service: Service, fields: Record<string, string>): { credential: CredentialInput } | { problem: string } | undefined {
  const capture = service.entry.capture;
  if (capture.strategy !== "paste") return undefined;
  const values: Record<string, string> = {};
  for (const field of capture.fields) {
    const v = (fields[field.name] ?? "").trim();
    if (!v) return { problem: `${field.label} is required.` };
    if (field.pattern && !new RegExp(field.pattern).test(v)) return { problem: `${field.label} does not look right for ${service.displayName}.` };
    values[field.name] = v;
  }
  return { credential: { kind: "fields", fields: values } };
}

/** The cookie credential once every required cookie exists, else undefined (not signed in yet). */
export function cookieCredential(service: Service, cookies: readonly BrowserCookie[]): CredentialInput | undefined {
  const capture = service.entry.capture;
  if (capture.strategy !== "cookie") return undefined;
  const names = new Set(cookies.map((c) => c.name));
  if (!capture.requiredCookies.every((n) => names.has(n))) return undefined;
  return {
    kind: "cookies",
    cookies: cookies.map((c) => ({ name: c.name, value: c.value, domain: c.domain, path: c.path, ...(c.expires !== undefined && c.expires > 0 ? { expires: c.expires } : {}), ...(c.httpOnly !== undefined ? { httpOnly: c.httpOnly } : {}), ...(c.secure !== undefined ? { secure: c.secure } : {}), ...(c.sameSite ? { sameSite: c.sameSite } : {}) })),
  };
}
