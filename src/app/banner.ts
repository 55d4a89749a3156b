// The start-up block: the last thing `serve` prints, saying where to go next. It names where the
// host token is, never the token itself (start-up output ends up in terminals and log files).

/** What the start-up block shows; every part but the MCP URL is optional. */
export interface BannerInput {
  /** The broker's MCP endpoint, e.g. http://127.0.0.1:8080/mcp. */
  readonly mcpUrl: string;
  /** The console's one-time link (the local workspace only). It carries the console token. */
  readonly consoleUrl?: string;
  /** Where the host token is: a development token file, or the variable that holds the tokens. */
  readonly hostToken: { readonly file: string } | { readonly env: "SLAUDE_HOST_TOKENS" } | undefined;
  /** A thread the Inspector command names in X-Slaude-Thread (team/channel/ts). */
  readonly exampleThread: string;
}

/** Quotes one word for a POSIX shell, so a path with spaces still pastes as one argument. */
function shellWord(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'"'"'`)}'`;
}

/** The MCP Inspector (CLI mode) command that lists the broker's tools with the host token and a thread. */
export function inspectorCommand(mcpUrl: string, tokenRef: string, exampleThread: string): string {
  return [
    "npx @modelcontextprotocol/inspector --cli",
    shellWord(mcpUrl),
    "--transport http",
    `--header "Authorization: Bearer ${tokenRef}"`,
    `--header ${shellWord(`X-Slaude-Thread: ${exampleThread}`)}`,
    "--method tools/list",
  ].join(" ");
}

/** The start-up block as lines of plain text, framed so it stands out from the JSON log lines. */
export function startupBanner(b: BannerInput): string {
  const rule = "=".repeat(72);
  const lines = [rule, "slaude-connect is ready"];
  if (b.consoleUrl) lines.push("", `  Console:     ${b.consoleUrl}`, "               (open it once: the link carries this run's console token)");
  lines.push("", `  MCP URL:     ${b.mcpUrl}`);
  if (!b.hostToken) {
    lines.push("  Host token:  none configured: every agent host is refused (set SLAUDE_HOST_TOKENS)", rule);
    return lines.join("\n") + "\n";
  }
  const tokenRef = "file" in b.hostToken ? `$(cat ${shellWord(b.hostToken.file)})` : "<one of SLAUDE_HOST_TOKENS>";
  lines.push(
    "file" in b.hostToken ? `  Host token:  ${b.hostToken.file} (send it as Authorization: Bearer <token>)` : "  Host token:  one of SLAUDE_HOST_TOKENS (send it as Authorization: Bearer <token>)",
    "",
    "  MCP Inspector (lists the broker's tools):",
    `    ${inspectorCommand(b.mcpUrl, tokenRef, b.exampleThread)}`,
    rule,
  );
  return lines.join("\n") + "\n";
}
