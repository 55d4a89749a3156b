import { createHash, randomBytes } from "node:crypto";

/** A PKCE pair (RFC 7636): the verifier stays with the broker, the challenge goes in the authorize URL. */
export interface Pkce {
  /** 43 characters of base64url from 32 random bytes (RFC 7636 §4.1: 43–128 unreserved characters). */
  readonly verifier: string;
  /** BASE64URL(SHA256(ASCII(verifier))), RFC 7636 §4.2. */
  readonly challenge: string;
  readonly method: "S256";
}

/** The S256 challenge for a verifier. */
export function s256Challenge(verifier: string): string {
  return createHash("sha256").update(verifier, "ascii").digest("base64url");
}

/** A fresh PKCE verifier and its S256 challenge. */
export function createPkce(): Pkce {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: s256Challenge(verifier), method: "S256" };
}

/** An unguessable `state` value (256 bits, base64url) binding the redirect to the flow that asked for it. */
export function randomState(): string {
  return randomBytes(32).toString("base64url");
}
