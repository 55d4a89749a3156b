// The input and output schemas of the five broker tools: what a model reads to use them. Every
// parameter carries a description, and every output schema describes each structuredContent the
// tool returns (an answer, a refusal, needs_connect), so hosts can validate without guessing.
import { z } from "zod";

/**
 * Makes each schema's JSON Schema a computed-once value. The SDK converts a tool's schemas when a
 * server lists or checks it, and the 2026-07-28 era builds a server for every request: without
 * this, every stateless call paid a full zod → JSON Schema conversion of its tool's input and output.
 */
function jsonSchemaOnce<T extends Record<string, z.ZodType>>(schemas: T): T {
  for (const schema of Object.values(schemas)) {
    const std = schema["~standard"];
    const convert = std.jsonSchema;
    const made = new Map<string, Record<string, unknown>>();
    const once =
      (io: "input" | "output") =>
      (opts: { readonly target: string }): Record<string, unknown> => {
        const key = `${io} ${opts.target}`;
        let json = made.get(key);
        if (!json) {
          json = convert[io](opts);
          made.set(key, json);
        }
        // A copy of the top level: what the SDK adds to it (a root `type`) never reaches the cached value.
        return { ...json };
      };
    schema["~standard"] = { ...std, jsonSchema: { input: once("input"), output: once("output") } };
  }
  return schemas;
}

const name = z.string().min(1).max(128);
const userId = z.string().regex(/^[UW][A-Z0-9]{2,30}$/, "a Slack user id such as U012ABCDEF");
const serviceName = name.describe('A service name, as listed by mcp_describe with no arguments (e.g. "gitlab")');

/**
 * What an mcp_call's arguments name, checked as its input schema checks those three (the rest is
 * neither read nor checked): what the MCP endpoint reads the call's facts ahead for.
 */
export const mcpCallTarget = z.object({ service: serviceName, tool: name, on_behalf_of: userId });

/**
 * Strict input schemas of the five tools. Register the objects themselves, never `.shape`: the SDK
 * rebuilds a plain (non-strict) object from a shape, which drops `additionalProperties: false`
 * and silently strips unknown arguments instead of refusing them.
 */
export const toolInputs = jsonSchemaOnce({
  mcp_call: z
    .object({
      service: serviceName,
      tool: name.describe("The vendor tool to run, as named by mcp_describe"),
      args: z
        .record(z.string(), z.unknown())
        .default({})
        .describe("Arguments for the vendor tool, matching its input schema (mcp_describe with `tool` shows it)"),
      on_behalf_of: userId.describe(
        "The Slack user id of the person whose message you are answering now (a cross-check: the broker knows the caller and refuses a mismatch)",
      ),
    })
    .strict(),
  mcp_describe: z
    .object({
      service: serviceName
        .optional()
        .describe("The service whose tools to list; leave out to list the services that exist"),
      tool: name.optional().describe("One tool of the service: returns its full input schema"),
      query: z
        .string()
        .max(200)
        .optional()
        .describe('Words describing what you want to do (e.g. "create issue"): ranks the service\'s tools by them'),
    })
    .strict(),
  connect: z.object({ service: serviceName.describe("The service to connect the caller's own account for") }).strict(),
  connections_list: z.object({}).strict(),
  connections_revoke: z
    .object({
      service: serviceName.optional().describe("Revoke all of the caller's connections to this service"),
      connection_id: z
        .string()
        .min(1)
        .max(64)
        .optional()
        .describe("Revoke this one connection (an id from connections_list)"),
    })
    .strict()
    // Either one is required; JSON Schema says so for the model, the handler enforces it.
    .meta({ anyOf: [{ required: ["service"] }, { required: ["connection_id"] }] }),
} as const);

/** Every status a broker tool's structuredContent can carry. */
const status = z
  .enum(["ok", "refused", "needs_connect", "consent_sent", "not_available"])
  .describe("ok: the answer; refused / needs_connect: see code and message");
/** The fields of a refusal, present whenever status is not ok. */
const refusal = {
  status,
  code: z.string().optional().describe("Why the call was refused (present unless status is ok)"),
  message: z.string().optional().describe("A sentence for the user or the model saying what to do next"),
  retryAfterSeconds: z
    .number()
    .optional()
    .describe(
      "store_unavailable: the broker's database is away (restarting); retrying after this many seconds may succeed",
    ),
};

const describedTool = z
  .object({
    name: z.string(),
    description: z.string(),
    class: z
      .object({
        access: z.enum(["personal", "borrowable", "own_or_shared"]),
        write: z.boolean(),
        classified: z.boolean(),
      })
      .describe(
        "How the broker treats the tool: personal tools run only on the caller's own account; write tools need an approval per borrowed call",
      ),
    inputSchema: z.record(z.string(), z.unknown()).optional(),
    pin: z
      .enum(["pinned", "quarantined", "new", "rejected"])
      .optional()
      .describe(
        "The tool's definition against its pin: quarantined and rejected tools are refused (their vendor changed them; an admin decides); new ones are refused until an admin accepts them, unless the service trusts new tools (then they run only on the caller's own account)",
      ),
    unreviewed: z
      .literal(true)
      .optional()
      .describe("Set when no admin has reviewed this tool's definition: only its name is shown"),
  })
  .loose();

const listedService = z
  .object({ name: z.string(), displayName: z.string(), description: z.string(), loginStrategy: z.string() })
  .loose();

const unavailable = {
  reason: z
    .enum(["backoff", "credential_rejected", "start_failed", "incompatible"])
    .describe(
      "backoff: a remote vendor's connects are failing; credential_rejected: the vendor refused the credential (reconnect); start_failed: the vendor's command did not start; incompatible: it speaks another MCP protocol version (the operator sets the registry's protocol)",
    ),
  since: z.string(),
  retryAt: z
    .string()
    .optional()
    .describe("backoff: calls are refused until this time, then the next call tries to connect"),
  failures: z.number().optional(),
  lastError: z
    .string()
    .describe("The broker's class of the last error (e.g. ECONNREFUSED, http_503, ENOENT); never vendor text"),
};
const connectionUnavailable = z
  .object(unavailable)
  .loose()
  .describe("Why this connection's vendor cannot be used right now");

const listedConnection = z
  .object({
    id: z.string(),
    service: z.string(),
    owner: z.string().nullable(),
    mine: z.boolean(),
    scope: z.string(),
    where: z.string(),
    status: z.string(),
    expiresAt: z.string(),
    grant: z.enum(["granted", "needs_approval"]).optional(),
    grantsGiven: z.number().optional(),
    unreachableUntil: z.string().optional(),
    unavailable: connectionUnavailable.optional(),
  })
  .loose();

/** Output schemas: each covers the answer and the refusals of its tool. */
export const toolOutputs = jsonSchemaOnce({
  mcp_call: z
    .object({
      ...refusal,
      service: z.string().optional(),
      tool: z.string().optional(),
      ranAs: z
        .enum(["own", "grant", "shared", "approval_once", "approval_thread"])
        .optional()
        .describe("Whose account ran it: own, a thread grant, the shared identity, or an owner's approval"),
      connectionOwner: z
        .string()
        .nullable()
        .optional()
        .describe("The Slack user id whose account ran the call (null for the shared identity)"),
      truncated: z.boolean().optional(),
      fullResult: z
        .object({ uri: z.string(), bytes: z.number(), pages: z.number(), expiresAt: z.string() })
        .optional()
        .describe(
          "When truncated: where the whole (redacted) result is kept for you; read it with resources/read, page N at `uri?page=N`",
        ),
      vendorIsError: z.boolean().optional().describe("The vendor tool itself reported an error"),
      result: z.record(z.string(), z.unknown()).optional().describe("The vendor's own structured result, redacted"),
    })
    .loose(),
  mcp_describe: z
    .object({
      ...refusal,
      services: z.array(listedService).optional().describe("With no service given: the services that exist"),
      service: z.string().optional(),
      displayName: z.string().optional(),
      source: z.enum(["cache", "registry"]).optional(),
      contentHash: z.string().nullable().optional(),
      fetchedAt: z.string().nullable().optional(),
      tools: z.array(describedTool).optional(),
      note: z.string().optional(),
      unavailable: z
        .array(z.object({ kind: z.enum(["connection"]), connectionId: z.string(), ...unavailable }).loose())
        .optional()
        .describe("The caller's usable connections to this service that cannot be used right now, and why"),
    })
    .loose(),
  connect: z.object({ ...refusal, service: z.string().optional() }).loose(),
  connections_list: z.object({ ...refusal, connections: z.array(listedConnection).optional() }).loose(),
  connections_revoke: z
    .object({ ...refusal, revoked: z.array(z.object({ id: z.string(), service: z.string() })).optional() })
    .loose(),
} as const);
