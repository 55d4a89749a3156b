import type { Config } from "../config/env.js";

// Which workspace a start runs, decided once from config: a pure function, so `serve` and `doctor`
// say the same thing. The local workspace never runs in production.

/** The workspace a start runs (`none`: no workspace, every call refused as not_member), or why it refuses to start. */
export type WorkspaceChoice =
  | { readonly kind: "slack" | "local" | "none"; readonly why: string }
  | { readonly kind: "refused"; readonly message: string };

/** The Slack variables the current SLACK_MODE needs, for messages that must name them. */
export function slackVariables(config: Config): string {
  return config.slack.mode === "socket"
    ? "SLACK_BOT_TOKEN and SLACK_APP_TOKEN (SLACK_MODE=socket)"
    : "SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET (SLACK_MODE=http)";
}

/** Decides the workspace from SLAUDE_WORKSPACE, NODE_ENV and whether Slack is configured. */
export function chooseWorkspace(config: Config): WorkspaceChoice {
  const slack = config.slack.configured;
  switch (config.workspace) {
    case "slack":
      return slack
        ? { kind: "slack", why: "SLAUDE_WORKSPACE=slack" }
        : {
            kind: "refused",
            message: `SLAUDE_WORKSPACE=slack but Slack is not configured: set ${slackVariables(config)} (see docs/slack-setup.md)`,
          };
    case "local":
      if (config.production)
        return {
          kind: "refused",
          message:
            "SLAUDE_WORKSPACE=local is for development only: the local workspace and its console never run with NODE_ENV=production; configure Slack instead",
        };
      if (slack)
        return {
          kind: "refused",
          message:
            "SLAUDE_WORKSPACE=local but Slack is configured too: unset the SLACK_* variables or SLAUDE_WORKSPACE",
        };
      return { kind: "local", why: "SLAUDE_WORKSPACE=local" };
    case "none":
      return slack
        ? {
            kind: "refused",
            message: "SLAUDE_WORKSPACE=none but Slack is configured: unset the SLACK_* variables or SLAUDE_WORKSPACE",
          }
        : { kind: "none", why: "SLAUDE_WORKSPACE=none" };
    case "auto":
      if (slack) return { kind: "slack", why: "Slack is configured" };
      if (config.production) {
        return {
          kind: "refused",
          message: `Slack is not configured and NODE_ENV=production: set ${slackVariables(config)} (see docs/slack-setup.md). The local workspace runs only in development; SLAUDE_WORKSPACE=none starts without any workspace (every call refused as not_member).`,
        };
      }
      // Tests start many apps with their own fakes; the local workspace is what a developer gets.
      if (config.nodeEnv === "test") return { kind: "none", why: "NODE_ENV=test without Slack" };
      return { kind: "local", why: "Slack is not configured (development)" };
  }
}
