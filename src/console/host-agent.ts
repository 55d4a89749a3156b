import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { errorMessage } from "../domain/errors.js";
import type { ThreadRef } from "../domain/thread.js";
import { VERSION } from "../domain/version.js";
import type { Logger } from "../log/logger.js";

/** The stateless protocol revision the console speaks to its own broker. */
const MODERN_REVISION = "2026-07-28";

// The console's "Play a thread" is an agent host like any other: it reports the turn on
// POST /v1/turns and calls the broker's tools on /mcp with a real MCP client pinned to the
// stateless 2026-07-28 revision (no session to open or end), with the host token and
// X-Slaude-Thread. Each console action is one turn: an explicit turn is reported, every request
// names it in X-Slaude-Turn, and the turn is ended afterwards, so two console users acting at once
// in one thread never borrow each other's identity.

/** The broker's five tools, the only ones the console host may call. */
export const BROKER_TOOLS = ["mcp_call", "mcp_describe", "connect", "connections_list", "connections_revoke"] as const;

/** One of {@link BROKER_TOOLS}. */
export type BrokerTool = (typeof BROKER_TOOLS)[number];

/** A progress notification the broker sent while a call ran (e.g. waiting for an owner). */
export interface HostProgress {
  readonly progress: number;
  readonly total?: number;
  readonly message?: string;
}

/** What a tool call answered: the broker's structured result and its text, as a host sees them. */
export type HostOutcome =
  | {
      readonly kind: "result";
      readonly isError: boolean;
      readonly structured: Record<string, unknown> | null;
      readonly text: string;
    }
  | {
      readonly kind: "host_error";
      readonly code: "busy" | "no_host_token" | "turn_refused" | "transport";
      readonly message: string;
    };

/** Settings of the console's host agent. */
export interface HostAgentOptions {
  /** The broker's own base URL, e.g. http://127.0.0.1:8080. */
  readonly baseUrl: string;
  /** The host token (read when needed: a development token may be written after start). */
  readonly hostToken: () => string | undefined;
  /** How long one tool call may take (the broker may wait for an owner's approval). */
  readonly callTimeoutMs: number;
  /** Turns in flight at once; beyond it an action is refused as `busy`. */
  readonly maxConcurrent?: number;
  readonly log: Logger;
}

/** The server-side agent host of the console: one explicit turn and one MCP client per action. */
export class HostAgent {
  private inFlight = 0;
  private readonly maxConcurrent: number;
  private readonly open = new Set<Client>();

  constructor(private readonly opts: HostAgentOptions) {
    this.maxConcurrent = opts.maxConcurrent ?? 16;
  }

  /** Calls broker tool `tool` with `args` as `userId` in `thread`, through /v1/turns and /mcp. */
  async call(
    thread: ThreadRef,
    userId: string,
    tool: BrokerTool,
    args: Record<string, unknown>,
    onProgress?: (p: HostProgress) => void,
  ): Promise<HostOutcome> {
    const token = this.opts.hostToken();
    if (!token)
      return {
        kind: "host_error",
        code: "no_host_token",
        message: "No host token is configured, so the console cannot act as an agent host.",
      };
    if (this.inFlight >= this.maxConcurrent)
      return {
        kind: "host_error",
        code: "busy",
        message: `The console already runs ${this.maxConcurrent} actions; wait for one to finish.`,
      };
    this.inFlight++;
    try {
      const turn = await this.startTurn(token, thread, userId);
      if (!turn.ok)
        return {
          kind: "host_error",
          code: "turn_refused",
          message: `The broker refused the turn report (HTTP ${turn.status}).`,
        };
      try {
        return await this.callInSession(token, thread, turn.id, tool, args, onProgress);
      } finally {
        await this.post(token, "/v1/turns/end", { turn_id: turn.id }).catch(() => undefined);
      }
    } catch (err) {
      this.opts.log.warn("console host agent call failed", { tool, error: errorMessage(err) });
      return {
        kind: "host_error",
        code: "transport",
        message: "The console could not reach the broker's MCP endpoint.",
      };
    } finally {
      this.inFlight--;
    }
  }

  private async startTurn(
    token: string,
    t: ThreadRef,
    userId: string,
  ): Promise<{ ok: true; id: string } | { ok: false; status: number }> {
    const res = await this.post(token, "/v1/turns", {
      team_id: t.teamId,
      channel_id: t.channelId,
      thread_ts: t.threadTs,
      user_id: userId,
      explicit_end: true,
    });
    const id = res.headers.get("x-slaude-turn");
    return res.status === 204 && id ? { ok: true, id } : { ok: false, status: res.status };
  }

  private async callInSession(
    token: string,
    t: ThreadRef,
    turnId: string,
    tool: BrokerTool,
    args: Record<string, unknown>,
    onProgress?: (p: HostProgress) => void,
  ): Promise<HostOutcome> {
    const transport = new StreamableHTTPClientTransport(new URL("/mcp", this.opts.baseUrl), {
      requestInit: {
        headers: {
          authorization: `Bearer ${token}`,
          "x-slaude-thread": `${t.teamId}/${t.channelId}/${t.threadTs}`,
          "x-slaude-turn": turnId,
        },
      },
    });
    // The broker is this process: it speaks 2026-07-28, so no probe and no fallback.
    const client = new Client(
      { name: "slaude-connect-console", version: VERSION },
      { versionNegotiation: { mode: { pin: MODERN_REVISION } } },
    );
    this.open.add(client);
    try {
      await client.connect(transport);
      const r = await client.callTool(
        { name: tool, arguments: args },
        {
          timeout: this.opts.callTimeoutMs,
          resetTimeoutOnProgress: true,
          ...(onProgress
            ? {
                onprogress: (p: { progress: number; total?: number | undefined; message?: string | undefined }) =>
                  onProgress({
                    progress: p.progress,
                    ...(p.total !== undefined ? { total: p.total } : {}),
                    ...(p.message !== undefined ? { message: p.message } : {}),
                  }),
              }
            : {}),
        },
      );
      const text = Array.isArray(r.content)
        ? r.content
            .map((c) =>
              c && typeof c === "object" && (c as { type?: unknown }).type === "text"
                ? String((c as { text?: unknown }).text ?? "")
                : "",
            )
            .join("\n")
        : "";
      const structured =
        r.structuredContent && typeof r.structuredContent === "object"
          ? (r.structuredContent as Record<string, unknown>)
          : null;
      return { kind: "result", isError: r.isError === true, structured, text };
    } finally {
      this.open.delete(client);
      await client.close().catch(() => undefined);
    }
  }

  private post(token: string, path: string, body: unknown): Promise<Response> {
    return fetch(new URL(path, this.opts.baseUrl), {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  }

  /** Closes the sessions of actions still running (server shutdown). */
  async close(): Promise<void> {
    await Promise.all([...this.open].map((c) => c.close().catch(() => undefined)));
  }
}
