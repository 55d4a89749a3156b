import { type CallToolResult, McpServer } from "@modelcontextprotocol/server";
import type { ServiceRegistry } from "../config/registry.js";
import { errorMessage } from "../domain/errors.js";
import { VERSION } from "../domain/version.js";
import type { Logger } from "../log/logger.js";
import { isStoreUnavailable } from "../store/errors.js";
import { answer, callAnswer, refusal } from "./answer.js";
import { serviceUnavailable, unavailableLine, unavailableText } from "./availability-view.js";
import type { CallService } from "./call.js";
import { listConnections, revokeConnections } from "./connections-tools.js";
import type { BrokerDeps, CallExtra, CallerContext } from "./deps.js";
import { describeService } from "./describe.js";
import { serveStoredResults } from "./result-resources.js";
import { type CallerResolver, callerRequest, requestLog, UnprovedAttempt } from "./tool-request.js";
import { toolInputs, toolOutputs } from "./tool-schemas.js";

/** The fixed tool list: it never changes during a session. */
export const BROKER_TOOLS = ["mcp_call", "mcp_describe", "connect", "connections_list", "connections_revoke"] as const;

export { toolInputs, toolOutputs } from "./tool-schemas.js";

/** How the `connect` tool answers when a consent channel exists. */
export type ConnectHandler = (ctx: CallerContext, caller: string, service: string) => Promise<CallToolResult>;

/** Options of a session's server: the broker-wide call service and, when consent is wired, the connect handler. */
export interface BrokerServerOptions {
  readonly calls: CallService;
  readonly connectAvailable?: ConnectHandler;
}

/**
 * Builds the slaude_connect MCP server for one session. `resolveCaller` is called on every tool
 * call: the caller is never captured when the session opens.
 */
export function createBrokerServer(
  deps: BrokerDeps,
  resolveCaller: CallerResolver,
  opts: BrokerServerOptions,
): McpServer {
  const server = new McpServer(
    { name: "slaude_connect", version: VERSION },
    {
      capabilities: { tools: { listChanged: false }, logging: {} },
      instructions: instructionsFor(deps.registry),
    },
  );
  const { calls } = opts;

  // The one place a tool call's caller is resolved: every tool but mcp_call needs one (mcp_call
  // lets the policy refuse a missing turn, so that refusal is audited like every other).
  const withCaller = async (
    extra: Parameters<typeof callerRequest>[0],
    fn: (ctx: CallerContext, caller: string, log: Logger) => Promise<CallToolResult>,
    needsCaller = true,
  ): Promise<CallToolResult> => {
    const log = requestLog(deps.log, extra);
    try {
      const ctx = await resolveCaller(callerRequest(extra));
      if (typeof ctx === "string") return refusal(ctx);
      if (needsCaller && !ctx.userId) return refusal("no_turn");
      return await fn(ctx, ctx.userId ?? "", log);
    } catch (err) {
      // Remembered rows that did not hold: the endpoint drops this answer and handles the request again
      // (should it ever reach a client, it says only that nothing ran).
      if (err instanceof UnprovedAttempt) return refusal("internal_error");
      // The database away (restarting) is a refusal with a retry hint, not a bug.
      if (isStoreUnavailable(err)) {
        log.warn("broker tool refused: the database is unavailable", { error: err.message });
        return refusal("store_unavailable");
      }
      log.error("broker tool failed", { error: errorMessage(err) });
      return refusal("internal_error");
    } finally {
      // A call made from remembered rows settles its attempt itself; whatever ended before it did, the answer stands.
      callerRequest(extra).ahead?.facts?.attempt?.settle?.("answered");
    }
  };

  server.registerTool(
    "mcp_call",
    {
      title: "Run a vendor tool",
      description:
        "Run a tool of a connected service as the user whose turn it is. If only another thread member connected the service, the owner may be asked to approve in Slack; the call waits for the answer.",
      inputSchema: toolInputs.mcp_call,
      outputSchema: toolOutputs.mcp_call,
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true, idempotentHint: false },
    },
    async (input, extra) =>
      withCaller(
        extra,
        async (ctx, _caller, log) => {
          const progressToken = extra.mcpReq._meta?.progressToken;
          const ahead = callerRequest(extra).ahead?.facts;
          const callExtra: CallExtra = {
            signal: extra.mcpReq.signal,
            log,
            ...(ahead ? { ahead } : {}),
            ...(progressToken !== undefined
              ? {
                  progress: (p) =>
                    extra.mcpReq.notify({
                      method: "notifications/progress",
                      params: {
                        progressToken,
                        progress: p.progress,
                        ...(p.total !== undefined ? { total: p.total } : {}),
                        ...(p.message ? { message: p.message } : {}),
                      },
                    }),
                }
              : {}),
          };
          return callAnswer(
            input,
            await calls.call(
              ctx,
              { service: input.service, tool: input.tool, args: input.args, on_behalf_of: input.on_behalf_of },
              callExtra,
            ),
          );
        },
        false,
      ),
  );

  server.registerTool(
    "mcp_describe",
    {
      title: "Describe a service's tools",
      description:
        "With no arguments: the services that exist. With `service`: its tools and their class (personal / borrowable, read / write); add `tool` for one tool's full input schema, or `query` to rank the tools by words.",
      inputSchema: toolInputs.mcp_describe,
      outputSchema: toolOutputs.mcp_describe,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async (input, extra) =>
      withCaller(extra, async (ctx, caller) => {
        if (input.service === undefined) return listServices(deps.registry);
        const service = deps.registry.get(input.service);
        if (!service)
          return refusal("unknown_service", {
            service: input.service,
            detail: deps.registry
              .list()
              .map((s) => s.name)
              .join(", "),
          });
        // A tool's schema asked for before any vendor of this team ran: start the caller's own (or
        // the shared) connection's vendor to learn it. Never a borrowed one: that needs an approval.
        if (input.tool && !(await deps.store.toolMetadata.get(ctx.thread.teamId, service.name)))
          await calls.warmMetadata(ctx, caller, service);
        const r = await describeService(deps, service, {
          teamId: ctx.thread.teamId,
          ...(input.tool ? { tool: input.tool } : {}),
          ...(input.query ? { query: input.query } : {}),
        });
        if ("notFound" in r)
          return refusal("invalid_request", { detail: `${input.service} has no tool "${r.notFound}"` });
        const unavailable = await serviceUnavailable(deps, ctx, caller, service);
        const lines = r.tools.map(
          (t) =>
            `- ${t.name} [${t.class.access}, ${t.class.write ? "write" : "read"}${t.class.classified ? "" : ", unclassified"}${t.pin && t.pin !== "pinned" ? `, ${t.pin}` : ""}]${t.description ? `: ${t.description.split("\n")[0]}` : ""}`,
        );
        const text = [
          `${r.displayName} (${r.tools.length} tool(s), from ${r.source})`,
          ...lines,
          ...(r.note ? [r.note] : []),
          ...unavailable.map((n) => unavailableLine(n, service.name)),
          ...(input.tool && r.tools[0]?.inputSchema ? [JSON.stringify(r.tools[0].inputSchema)] : []),
        ].join("\n");
        return answer(text, { ...r, ...(unavailable.length ? { unavailable } : {}) });
      }),
  );

  server.registerTool(
    "connect",
    {
      title: "Connect an account",
      description:
        "Start connecting the caller's own account for a service: the user gets a private consent card in Slack (never in the conversation). Call it when mcp_call says needs_connect.",
      inputSchema: toolInputs.connect,
      outputSchema: toolOutputs.connect,
      annotations: { readOnlyHint: false, openWorldHint: true },
    },
    async (input, extra) =>
      withCaller(extra, async (ctx, caller) => {
        if (!deps.registry.get(input.service)) {
          return refusal("unknown_service", {
            service: input.service,
            detail: deps.registry
              .list()
              .map((s) => s.name)
              .join(", "),
          });
        }
        if (opts.connectAvailable) return opts.connectAvailable(ctx, caller, input.service);
        const message = `Connecting an account from a conversation needs a workspace to deliver the private login card, and this slaude-connect runs without one (SLAUDE_WORKSPACE=none, or no Slack configured). An operator turns it on by configuring Slack (the SLACK_* variables, docs/slack-setup.md), or adds a connection with \`slaude-connect connections add\`.`;
        return answer(message, { code: "not_available", service: input.service, message }, "not_available");
      }),
  );

  server.registerTool(
    "connections_list",
    {
      title: "List connections",
      description:
        "The caller's own connections, plus connections usable in this thread whose owners are current members, with expiry and grant state.",
      inputSchema: toolInputs.connections_list,
      outputSchema: toolOutputs.connections_list,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async (_input, extra) =>
      withCaller(extra, async (ctx, caller) => {
        const { rows, more } = await listConnections(deps, ctx, caller);
        const text = rows.length
          ? rows
              .map(
                (r) =>
                  `- ${r.id} ${r.service} ${r.mine ? "(yours)" : r.owner ? `(<@${r.owner}>, ${r.grant === "granted" ? "you have a thread grant" : "use asks the owner"})` : "(shared identity)"} ${r.where}, ${r.status}, expires ${r.expiresAt}${r.unavailable ? `; ${unavailableText(r.unavailable, r.service)}` : ""}`,
              )
              .join("\n")
          : "No connections usable here. Use connect(service) to connect an account.";
        return answer(more ? `${text}\n(more not shown)` : text, { connections: rows, ...(more ? { more } : {}) });
      }),
  );

  server.registerTool(
    "connections_revoke",
    {
      title: "Revoke my connections",
      description:
        "Revoke the caller's own connections (by service or id): the credential is wiped, its process stopped and every grant on it revoked, immediately.",
      inputSchema: toolInputs.connections_revoke,
      outputSchema: toolOutputs.connections_revoke,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    async (input, extra) =>
      withCaller(extra, async (ctx, caller) => {
        if (!input.service && !input.connection_id)
          return refusal("invalid_request", { detail: "give service or connection_id" });
        const ended = await revokeConnections(deps, ctx, caller, {
          ...(input.service ? { service: input.service } : {}),
          ...(input.connection_id ? { connectionId: input.connection_id } : {}),
        });
        if (ended.length === 0) return refusal("not_found");
        return answer(
          `Revoked ${ended.length} connection(s): ${ended.map((c) => `${c.id} (${c.service})`).join(", ")}.`,
          { revoked: ended.map((c) => ({ id: c.id, service: c.service })) },
        );
      }),
  );

  // registerTool turns listChanged on whatever was passed; the list never changes, so say so.
  server.server.registerCapabilities({ tools: { listChanged: false } });
  // Truncated results' full text, for their caller in this thread only (no listing of anyone's).
  serveStoredResults(server, deps, (ctx) => resolveCaller(callerRequest(ctx)));
  return server;
}

/** The server's instructions: how to use the five tools, and which services exist. */
function instructionsFor(registry: ServiceRegistry): string {
  const names = registry.list().map((s) => (s.displayName === s.name ? s.name : `${s.name} (${s.displayName})`));
  return [
    "slaude_connect runs vendor tools on the Slack user's own accounts.",
    `Services here: ${names.length ? names.join(", ") : "none configured"}.`,
    "mcp_describe with no arguments lists the services; with a service it lists its tools (use `query` to find one, `tool` for its input schema).",
    "mcp_call runs a tool, with on_behalf_of set to the Slack user id of the person whose message you are answering.",
    "When mcp_call answers needs_connect, call connect(service): the user gets a private sign-in card.",
    "A result too big to return whole is cut and carries a resource_link (slaude://results/…): read the rest with resources/read, page N at ?page=N, in this thread while it is the same user's turn.",
  ].join(" ");
}

/** mcp_describe with no service: every service of the registry. */
function listServices(registry: ServiceRegistry): CallToolResult {
  const services = registry.list().map((s) => ({
    name: s.name,
    displayName: s.displayName,
    description: s.entry.description ?? "",
    loginStrategy: s.entry.capture.strategy,
  }));
  const text = services.length
    ? [
        "Services (give one as `service` to see its tools):",
        ...services.map((s) => `- ${s.name}: ${s.displayName}${s.description ? `. ${s.description}` : ""}`),
      ].join("\n")
    : "No services are configured on this broker.";
  return answer(text, { services });
}
