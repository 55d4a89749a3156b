import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { beginAuthorization, randomState } from "../../../src/login/oauth/authorize.js";
import { s256Challenge } from "./support.js";

// PKCE is made by the MCP SDK's startAuthorization inside beginAuthorization: these check the pair
// it puts in the authorization URL against an independent S256 oracle.

/** The PKCE pair of one authorization request: the verifier kept, the challenge and method sent. */
async function createPkce() {
  const { url, verifier } = await beginAuthorization({
    authorizationEndpoint: "https://auth.example.com/authorize",
    clientId: "c",
    redirectUri: "http://127.0.0.1:8080/cb",
    scopes: [],
    state: "s",
  });
  const q = new URL(url).searchParams;
  return { verifier, challenge: q.get("code_challenge") ?? "", method: q.get("code_challenge_method") };
}

describe("createPkce", () => {
  it("makes an RFC 7636 verifier: 43-128 unreserved characters, different every time", async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const p = await createPkce();
      expect(p.verifier).toMatch(/^[A-Za-z0-9._~-]{43,128}$/);
      expect(p.method).toBe("S256");
      seen.add(p.verifier);
    }
    expect(seen.size).toBe(50);
  });

  it("derives the challenge as BASE64URL(SHA256(verifier)) without padding", async () => {
    const p = await createPkce();
    const expected = createHash("sha256")
      .update(p.verifier)
      .digest("base64")
      .replace(/\+/g, "-")
      .replace(/\//g, "_")
      .replace(/=+$/, "");
    expect(p.challenge).toBe(expected);
    expect(p.challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("matches the RFC 7636 appendix B example (the oracle the URL checks rely on)", () => {
    expect(s256Challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")).toBe(
      "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    );
  });
});

describe("randomState", () => {
  it("is 256 random bits, base64url, never repeated", () => {
    const a = randomState();
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(randomState()).not.toBe(a);
  });
});
