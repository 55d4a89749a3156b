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
