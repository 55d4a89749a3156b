import type { SlackConfig } from "../config/env.js";

/** What Slack says about the bot token: its scopes (from auth.test's `x-oauth-scopes`), or why it could not be asked. */
export type TokenScopes =
  | { readonly kind: "ok"; readonly scopes: readonly string[] | undefined }
  | { readonly kind: "failed"; readonly error: string };

/**
 * Calls auth.test once with the configured bot token (at SLACK_API_URL when set) and reads the
 * scopes Slack grants it. Never throws; the error is Slack's code or the network failure, never the token.
 */
export async function botTokenScopes(cfg: SlackConfig, timeoutMs = 10_000): Promise<TokenScopes> {
  if (!cfg.botToken) return { kind: "failed", error: "SLACK_BOT_TOKEN is not set" };
  // Loaded here, not at the top: every CLI command imports doctor's module, and only this needs Bolt.
  const { LogLevel, webApi } = await import("@slack/bolt");
  const client = new webApi.WebClient(cfg.botToken, {
    ...(cfg.apiUrl ? { slackApiUrl: cfg.apiUrl.endsWith("/") ? cfg.apiUrl : `${cfg.apiUrl}/` } : {}),
    retryConfig: { retries: 0 },
    timeout: timeoutMs,
    logLevel: LogLevel.ERROR,
    logger: {
      debug: () => {},
      info: () => {},
      warn: () => {},
      error: () => {},
      setLevel: () => {},
      getLevel: () => LogLevel.ERROR,
      setName: () => {},
    },
  });
  try {
    const r = await client.auth.test();
    return { kind: "ok", scopes: r.response_metadata?.scopes };
  } catch (e) {
    const data = (e as { data?: { error?: unknown } }).data;
    return {
      kind: "failed",
      error: typeof data?.error === "string" ? data.error : ((e as { code?: string }).code ?? "request failed"),
    };
  }
}
