import { createHmac, randomBytes } from "node:crypto";
import type { KeyRing } from "../vault/keyring.js";

/** A fresh one-time link token: 256 random bits, URL-safe. It is a bearer secret: never logged. */
export function newLinkToken(): string {
  return randomBytes(32).toString("base64url");
}

/** A fresh viewer-session secret for the browser that opens a link. */
export function newViewerSecret(): string {
  return randomBytes(32).toString("base64url");
}

/** What the store keeps instead of a token or viewer secret: an HMAC under the login-link subkey. */
export function secretHash(keys: KeyRing, secret: string): string {
  return createHmac("sha256", keys.subkey("login-link")).update(secret).digest("hex");
}

/** Whether a string has the shape of a link token (before any lookup). */
export function isTokenShaped(s: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(s);
}
