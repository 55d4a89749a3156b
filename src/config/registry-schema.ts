import { z } from "zod";

// The service registry: one entry per vendor, saying how to run or reach its MCP server, how its
// credential is captured and injected, how long it lives, and the class of each tool.
// Every object is strict: an unknown key is a typo the operator wants to hear about.

/** A service's name in the registry (also what every edge that names a service accepts). */
export const serviceName = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,62}$/, "service names are lowercase letters, digits, '-' or '_', starting with a letter");

const envVarName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "not a valid environment variable name");

const hostPattern = z
  .string()
  .regex(/^(\*\.)?[a-z0-9.-]+(:\d+)?$/i, 'a host name such as "gitlab.com", "*.atlassian.net" or "127.0.0.1:8443"');

/**
 * A credential template: literal text with `{{field}}` placeholders filled from the stored
 * credential (`{{token}}`, `{{access_token}}`, `{{cookie_header}}`, any pasted field name) and
 * `{{base64:a:b}}` for the base64 of the joined fields (HTTP Basic).
 */
const credentialTemplate = z
  .string()
  .min(1)
  .regex(/\{\{[a-z0-9_:]+\}\}/i, "must reference the credential with a {{field}} placeholder");

/** A tool's class: the words that decide who may run it on whose connection (brief §2). */
export const toolClassWord = z.enum(["personal", "borrowable", "read", "write"]);

/** A tool class as written in the registry: exactly one of read/write, at most one of personal/borrowable. */
export const toolClassSchema = z
  .array(toolClassWord)
  .min(1)
  .superRefine((words, ctx) => {
    const has = (w: string) => words.includes(w as never);
    if (has("read") === has("write"))
      ctx.addIssue({ code: "custom", message: 'a tool class names exactly one of "read" or "write"' });
    if (has("personal") && has("borrowable"))
      ctx.addIssue({ code: "custom", message: 'a tool cannot be both "personal" and "borrowable"' });
    if (new Set(words).size !== words.length)
      ctx.addIssue({ code: "custom", message: "a tool class lists a word twice" });
  });

const stdioTransport = z
  .object({
    type: z.literal("stdio"),
    command: z.string().min(1).describe("Executable to run (no shell). Resolved on PATH."),
    args: z.array(z.string()).default([]).describe("Arguments. Never put a credential here: argv is world-readable."),
    env: z.record(envVarName, z.string()).default({}).describe("Static, non-secret environment for the child."),
    credentialEnv: z
      .record(envVarName, credentialTemplate)
      .refine((r) => Object.keys(r).length > 0, "at least one variable must carry the credential")
      .describe("Environment variables that carry the connection's credential, as templates."),
    cwd: z.string().optional(),
  })
  .strict();

const httpTransport = z
  .object({
    type: z.literal("http"),
    url: z.url({ protocol: /^https?$/ }).describe("The remote MCP endpoint."),
    protocol: z
      .enum(["auto", "streamable-http", "sse"])
      .default("auto")
      .describe("auto = Streamable HTTP, falling back to SSE."),
    credentialHeader: z
      .object({ name: z.string().regex(/^[A-Za-z0-9-]+$/), value: credentialTemplate })
      .strict()
      .default({ name: "Authorization", value: "Bearer {{access_token}}" }),
  })
  .strict();

const pasteField = z
  .object({
    name: z.string().regex(/^[a-z][a-z0-9_]*$/),
    label: z.string().min(1),
    secret: z.boolean().default(true),
    pattern: z.string().optional().describe("A regular expression the pasted value must match."),
  })
  .strict();

const pasteCapture = z
  .object({
    strategy: z.literal("paste"),
    instructions: z.string().default("Create an API token in your account settings and paste it here."),
    startUrl: z.url().optional().describe("A page the confined browser opens to help the user create the token."),
    fields: z
      .array(pasteField)
      .min(1)
      .default([{ name: "token", label: "API token", secret: true }]),
  })
  .strict();

const cookieCapture = z
  .object({
    strategy: z.literal("cookie"),
    startUrl: z.url(),
    requiredCookies: z.array(z.string().min(1)).min(1).describe("Capture completes once all of these cookies exist."),
  })
  .strict();

/**
 * Origins beyond the issuer's (or MCP server's) own that discovered OAuth endpoints and device
 * verification links may use: bare https origins ("https://auth.example.com"), or loopback http
 * ones for development. Anything discovered elsewhere is refused (src/login/oauth/endpoint-policy.ts).
 */
const allowedOrigins = z
  .array(
    z
      .string()
      .regex(
        /^(https:\/\/[^/?#@\s]+|http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?)$/,
        'a bare origin such as "https://auth.example.com" (no path; http only for loopback)',
      )
      .refine(
        (o) => URL.canParse(o) && new URL(o).origin === o,
        "an origin, exactly as a browser writes it (lowercase host, no default port)",
      ),
  )
  .max(16)
  .default([])
  .describe(
    "Extra origins discovered OAuth endpoints and device verification links may be on (the issuer's own origin always may).",
  );

const oauthCapture = z
  .object({
    strategy: z.literal("oauth"),
    authorizationUrl: z.url().optional(),
    tokenUrl: z.url().optional(),
    discovery: z
      .boolean()
      .default(false)
      .describe("Discover endpoints from the remote MCP server's metadata (and register dynamically if offered)."),
    clientId: z.string().optional(),
    clientSecretEnv: envVarName
      .optional()
      .describe("Name of the broker's env var holding the client secret (never the secret itself)."),
    scopes: z.array(z.string()).default([]),
    extraAuthorizeParams: z.record(z.string(), z.string()).default({}),
    allowedOrigins,
  })
  .strict()
  .superRefine((c, ctx) => {
    if (!c.discovery && (!c.authorizationUrl || !c.tokenUrl || !c.clientId)) {
      ctx.addIssue({
        code: "custom",
        message: "oauth needs authorizationUrl, tokenUrl and clientId unless discovery is true",
      });
    }
  });

const deviceCapture = z
  .object({
    strategy: z.literal("device"),
    device: z
      .object({
        issuer: z
          .url()
          .optional()
          .describe(
            "Authorization server issuer: the endpoints are discovered from its RFC 8414 metadata (device_authorization_endpoint, token_endpoint).",
          ),
        deviceAuthorizationEndpoint: z
          .url()
          .optional()
          .describe("RFC 8628 device authorization endpoint (configured instead of issuer)."),
        tokenEndpoint: z.url().optional().describe("Token endpoint (configured instead of issuer)."),
        clientId: z.string().min(1),
        scopes: z.array(z.string()).default([]),
        allowedOrigins,
      })
      .strict()
      .superRefine((d, ctx) => {
        const configured = d.deviceAuthorizationEndpoint !== undefined || d.tokenEndpoint !== undefined;
        if (
          d.issuer !== undefined
            ? configured
            : d.deviceAuthorizationEndpoint === undefined || d.tokenEndpoint === undefined
        ) {
          ctx.addIssue({
            code: "custom",
            message:
              "device needs either issuer (endpoints discovered) or both deviceAuthorizationEndpoint and tokenEndpoint, not both",
          });
        }
      })
      .describe(
        "The device authorization grant's public client, and its endpoints: discovered from issuer, or configured.",
      ),
  })
  .strict();

/** How a service's credential is captured (brief §6). */
export const captureSchema = z.discriminatedUnion("strategy", [
  pasteCapture,
  cookieCapture,
  oauthCapture,
  deviceCapture,
]);

const durationValue = z.union([
  z.string().regex(/^\d+(s|m|h|d)?$/, 'a duration like "30m", "8h", "7d"'),
  z.number().positive(),
]);

/** The MCP protocol era a service's vendor is spoken to in (src/pool/era.ts). */
export const mcpProtocol = z.enum(["auto", "2025-11-25", "2026-07-28"]);

/** One service entry. */
export const serviceSchema = z
  .object({
    displayName: z.string().min(1).optional(),
    description: z.string().optional(),
    transport: z.discriminatedUnion("type", [stdioTransport, httpTransport]),
    protocol: mcpProtocol
      .optional()
      .describe(
        'The MCP protocol era to speak: "auto" probes with server/discover and falls back to the 2025 handshake; "2025-11-25" (initialize) or "2026-07-28" (stateless) pins one. Default: "auto" for http vendors, "2025-11-25" for stdio ones (some servers exit on a request before initialize).',
      ),
    capture: captureSchema,
    loginDomains: z.array(hostPattern).default([]).describe("Hosts the confined login browser may load."),
    ttl: durationValue.default("8h").describe("How long a captured credential lives."),
    scopes: z
      .array(z.enum(["thread", "user", "shared"]))
      .min(1)
      .default(["thread"])
      .describe("Scopes a connection to this service may have."),
    tools: z.record(z.string().min(1), toolClassSchema).default({}).describe("Class of each vendor tool."),
    defaultToolClass: toolClassSchema
      .default(["personal", "write"])
      .describe("Class of tools not listed (fail closed)."),
    trustNewTools: z
      .boolean()
      .default(false)
      .describe(
        "Let tools the vendor adds after its first listing run (under the fail-closed class) and show their text before an admin accepts them. Default: shown by name only and refused until accepted.",
      ),
  })
  .strict()
  .superRefine((e, ctx) => {
    // The HTTP+SSE transport is 2024-era: it has no stateless requests to carry the 2026-07-28 revision.
    if (e.protocol === "2026-07-28" && e.transport.type === "http" && e.transport.protocol === "sse") {
      const message = 'protocol "2026-07-28" needs the Streamable HTTP transport, not "sse"';
      ctx.addIssue({ code: "custom", path: ["protocol"], message });
    }
  });

/** The whole registry file. */
export const registrySchema = z
  .object({
    $schema: z.string().optional(),
    services: z.record(serviceName, serviceSchema),
  })
  .strict();

export type RegistryFileInput = z.input<typeof registrySchema>;
export type RegistryFile = z.output<typeof registrySchema>;
export type ServiceEntry = z.output<typeof serviceSchema>;
export type ToolClassWord = z.output<typeof toolClassWord>;
