import type { OAuthMetadata } from "@modelcontextprotocol/client";
import { OAuthError } from "./errors.js";

// Glue to the MCP SDK's client/auth.js: the shapes it reads, and the rule that its errors never
// surface (they can quote a vendor's body): ours are rethrown, anything else is re-classified by
// the caller from what our guarded fetch observed.

/** Endpoints already checked by `checkEndpoint`, and the issuer they belong to. */
export interface Endpoints {
  readonly issuer: string;
  readonly tokenEndpoint: string;
  readonly authorizationEndpoint?: string;
  readonly registrationEndpoint?: string;
}

/**
 * Our endpoints in the SDK's metadata shape, so its functions call exactly these URLs (without
 * metadata it guesses `/token`, `/authorize`, `/register`). A token request reads only
 * `token_endpoint`, so a refresh, which knows no authorization endpoint, names the token endpoint there.
 */
export function sdkMetadata(e: Endpoints): OAuthMetadata {
  return {
    issuer: e.issuer,
    authorization_endpoint: e.authorizationEndpoint ?? e.tokenEndpoint,
    token_endpoint: e.tokenEndpoint,
    ...(e.registrationEndpoint ? { registration_endpoint: e.registrationEndpoint } : {}),
    response_types_supported: ["code"],
    code_challenge_methods_supported: ["S256"],
  };
}

/** Rethrows our own coded errors (from the guarded fetch); returns for anything the SDK raised itself. */
export function rethrowOwn(err: unknown): void {
  if (err instanceof OAuthError) throw err;
}
