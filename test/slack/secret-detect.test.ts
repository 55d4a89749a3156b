import { describe, expect, it } from "vitest";
import { looksLikeSecret } from "../../src/slack/secret-detect.js";

describe("looksLikeSecret", () => {
  it.each([
    "glpat-" + "a1B2c3D4e5F6g7H8i9J0",
    `ghp_${"A".repeat(18)}1234567890`,
    "xoxb-1234567890-abcdefghij",
    `here it is: sk-${"aB3".repeat(8)}`,
    "AKIAABCDEFGHIJKLMNOP",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlX2J5dGVzXzEyMw",
    "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
  ])("flags %s", (t) => expect(looksLikeSecret(t)).toBe(true));

  it.each([
    "jira",
    "please look at PROJ-1234 and the PR",
    "0123456789abcdef0123456789abcdef01234567", // a commit hash
    "123e4567-e89b-12d3-a456-426614174000", // a UUID
    "src/slack/secret-detect.ts:20",
    "https://example.com/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789/path",
  ])("does not flag %s", (t) => expect(looksLikeSecret(t)).toBe(false));
});
