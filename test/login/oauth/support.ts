import { createHash } from "node:crypto";
import { expect } from "vitest";
import { OAuthError } from "../../../src/login/oauth/errors.js";

/** Awaits a promise that must reject with an OAuthError, and returns that error. */
export async function oauthError(p: Promise<unknown>): Promise<OAuthError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OAuthError);
  return err as OAuthError;
}

/** The RFC 7636 §4.2 S256 challenge of a verifier, computed apart from the code under test (the oracle). */
export function s256Challenge(verifier: string): string {
  return createHash("sha256").update(verifier, "ascii").digest("base64url");
}
