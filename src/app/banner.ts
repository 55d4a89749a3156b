// The start-up block: the last thing `serve` prints, saying where to go next. It names where the
// host token is, never the token itself (start-up output ends up in terminals and log files).

/** A real thread of the local workspace and a member of its channel: the block's commands call a tool there. */
export interface BannerTry {
  readonly teamId: string;
  readonly channelId: string;
  readonly channelName: string;
  readonly threadTs: string;
  readonly userId: string;
  readonly userName: string;
  /** The service mcp_describe is called for; without one the call is connections_list. */
  readonly service?: string;
}

/** What the start-up block shows; every part but the MCP URL is optional. */
export interface BannerInput {
  /** The broker's MCP endpoint, e.g. http://127.0.0.1:8080/mcp. */
  readonly mcpUrl: string;
  /** The console's one-time link (the local workspace only). It carries the console token. */
  readonly consoleUrl?: string;
  /** Where the host token is: a development token file, or the variable that holds the tokens. */
  readonly hostToken: { readonly file: string } | { readonly env: "SLAUDE_HOST_TOKENS" } | undefined;
  /** A thread the Inspector command names in X-Slaude-Thread (team/channel/ts), when there is no `tryCall`. */
  readonly exampleThread: string;
  /** With it the block prints a turn (curl POST /v1/turns) and an Inspector tools/call in that thread. */
  readonly tryCall?: BannerTry;
}

/** Quotes one word for a POSIX shell, so a path with spaces still pastes as one argument. */
function shellWord(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'"'"'`)}'`;
}

/** The MCP Inspector (CLI mode) command with the host token and a thread; `method` and its arguments last. */
export function inspectorCommand(
  mcpUrl: string,
  tokenRef: string,
  exampleThread: string,
  method: readonly string[] = ["--method", "tools/list"],
): string {
  return [
    "npx @modelcontextprotocol/inspector --cli",
    shellWord(mcpUrl),
    "--transport http",
    `--header "Authorization: Bearer ${tokenRef}"`,
    `--header ${shellWord(`X-Slaude-Thread: ${exampleThread}`)}`,
    ...method.map(shellWord),
  ].join(" ");
}

/** The curl command that gives `t.userId` the turn in the thread (POST /v1/turns, as a host reports it). */
export function turnCommand(mcpUrl: string, tokenRef: string, t: BannerTry): string {
  const turnsUrl = new URL("/v1/turns", mcpUrl).toString();
  const body = JSON.stringify({ team_id: t.teamId, channel_id: t.channelId, thread_ts: t.threadTs, user_id: t.userId });
  return [
    "curl -fsS -X POST",
    shellWord(turnsUrl),
    `-H "Authorization: Bearer ${tokenRef}"`,
    "-H 'Content-Type: application/json'",
    "-d",
    shellWord(body),
  ].join(" ");
}

/** The lines that call a tool: the turn, then the Inspector's tools/call (mcp_describe of a service, else connections_list). */
function tryLines(mcpUrl: string, tokenRef: string, t: BannerTry): string[] {
  const thread = `${t.teamId}/${t.channelId}/${t.threadTs}`;
  const call = t.service
    ? ["--method", "tools/call", "--tool-name", "mcp_describe", "--tool-arg", `service=${t.service}`]
    : ["--method", "tools/call", "--tool-name", "connections_list"];
  return [
    `  Call a tool as ${t.userName}, in ${t.userName}'s thread in #${t.channelName} (${thread}):`,
    `  1. Give ${t.userName} the turn there, as an agent host does when someone writes (POST /v1/turns):`,
    `    ${turnCommand(mcpUrl, tokenRef, t)}`,
    `  2. Then, with the MCP Inspector, ${t.service ? `describe the ${t.service} service's tools` : "list their connections"}:`,
    `    ${inspectorCommand(mcpUrl, tokenRef, thread, call)}`,
    `  (the same command ending in --method tools/list instead lists the broker's tools)`,
  ];
}

/** The start-up block as lines of plain text, framed so it stands out from the JSON log lines. */
export function startupBanner(b: BannerInput): string {
  const rule = "=".repeat(72);
  const lines = [rule, "slaude-connect is ready"];
  if (b.consoleUrl)
    lines.push(
      "",
      `  Console:     ${b.consoleUrl}`,
      "               (open it once: the link carries this run's console token)",
    );
  lines.push("", `  MCP URL:     ${b.mcpUrl}`);
  if (!b.hostToken) {
    lines.push("  Host token:  none configured: every agent host is refused (set SLAUDE_HOST_TOKENS)", rule);
    return `${lines.join("\n")}\n`;
  }
  const tokenRef = "file" in b.hostToken ? `$(cat ${shellWord(b.hostToken.file)})` : "<one of SLAUDE_HOST_TOKENS>";
  lines.push(
    "file" in b.hostToken
      ? `  Host token:  ${b.hostToken.file} (send it as Authorization: Bearer <token>)`
      : "  Host token:  one of SLAUDE_HOST_TOKENS (send it as Authorization: Bearer <token>)",
    "",
  );
  if (b.tryCall) lines.push(...tryLines(b.mcpUrl, tokenRef, b.tryCall));
  else
    lines.push(
      "  MCP Inspector (lists the broker's tools; a tools/call needs a turn first: POST /v1/turns, docs/host-integration.md):",
      `    ${inspectorCommand(b.mcpUrl, tokenRef, b.exampleThread)}`,
    );
  lines.push(rule);
  return `${lines.join("\n")}\n`;
}
