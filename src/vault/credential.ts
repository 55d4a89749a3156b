import { z } from "zod";

/** A captured credential as stored (encrypted) in the vault; validated again on every decryption. */
export const credentialSchema = z.discriminatedUnion("kind", [
  z
    .object({
      kind: z.literal("fields"),
      /** Pasted or operator-supplied values, e.g. { token } or { email, token }. */
      fields: z.record(z.string().regex(/^[a-z][a-z0-9_]*$/), z.string().min(1)),
    })
    .strict(),
  z
    .object({
      kind: z.literal("oauth"),
      accessToken: z.string().min(1),
      refreshToken: z.string().min(1).optional(),
      tokenType: z.string().default("Bearer"),
      /** Access-token expiry, ms since epoch. */
      expiresAt: z.number().int().optional(),
      scope: z.string().optional(),
      /**
       * The OAuth client the tokens were issued to, when it is not in the registry (discovery +
       * dynamic registration): a refresh token only works with the client that obtained it.
       */
      client: z
        .object({
          tokenEndpoint: z.url(),
          clientId: z.string().min(1),
          clientSecret: z.string().min(1).optional(),
          resource: z.string().optional(),
        })
        .strict()
        .optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal("cookies"),
      cookies: z.array(
        z
          .object({
            name: z.string().min(1),
            value: z.string(),
            domain: z.string().min(1),
            path: z.string().default("/"),
            expires: z.number().optional(),
            httpOnly: z.boolean().optional(),
            secure: z.boolean().optional(),
            sameSite: z.enum(["Strict", "Lax", "None"]).optional(),
          })
          .strict(),
      ),
    })
    .strict(),
]);

export type Credential = z.output<typeof credentialSchema>;
export type CredentialInput = z.input<typeof credentialSchema>;

/** The template variables a credential offers to the registry's credentialEnv / credentialHeader. */
export function credentialVariables(c: Credential): Record<string, string> {
  switch (c.kind) {
    case "fields":
      return { ...c.fields };
    case "oauth":
      return { access_token: c.accessToken, token: c.accessToken, token_type: c.tokenType };
    case "cookies":
      return { cookie_header: c.cookies.map((k) => `${k.name}=${k.value}`).join("; ") };
  }
}

/** Every raw secret string inside a credential, for redaction. */
export function credentialSecrets(c: Credential): string[] {
  switch (c.kind) {
    case "fields":
      return Object.values(c.fields);
    case "oauth":
      return [
        c.accessToken,
        ...(c.refreshToken ? [c.refreshToken] : []),
        ...(c.client?.clientSecret ? [c.client.clientSecret] : []),
      ];
    case "cookies":
      return c.cookies.map((k) => k.value).filter((v) => v.length > 0);
  }
}
