import { WebClient } from "@slack/web-api";
import { InstallationError } from "../../installations/errors.js";
import { slackErrorCode } from "../../installations/token-refresh.js";
import { slackClientOptions } from "../../slack/slack-app.js";
import { LOCAL_TEAM_ID } from "../../workspace/local/model.js";
import type { CliContext } from "../context.js";
import { installationsOf } from "./installations.js";

// Whether `connections login` may mint a link for a user: a link for nobody is a bearer secret
// nobody should hold, so the user must exist now. The local team's people are in the store; a
// Slack team's are Slack's (users.info with the token of the installation serving the team).
// Anything that cannot be verified (no installation, Slack unreachable) is refused: fail closed.

/** `undefined` when the user exists and can sign in, else why not (one line for the operator). */
export async function loginUserRefusal(ctx: CliContext, teamId: string, userId: string): Promise<string | undefined> {
  if (teamId === LOCAL_TEAM_ID) {
    const users = await ctx.store.workspace.users(LOCAL_TEAM_ID);
    if (users.some((u) => u.id === userId)) return undefined;
    return `unknown user "${userId}" in the local workspace ${users.length ? `(its users: ${users.map((u) => u.id).join(", ")})` : "(it has no users yet: start the broker once in development to seed the demo team)"}`;
  }
  let botToken: string;
  try {
    botToken = (await installationsOf(ctx).tokenForTeam(teamId)).botToken;
  } catch (err) {
    if (err instanceof InstallationError)
      return `no active installation serves team ${teamId} (${err.code}), so user "${userId}" cannot be verified; see \`slaude-connect installations list\``;
    throw err;
  }
  try {
    const r = await new WebClient(botToken, {
      ...slackClientOptions(ctx.config.slack, ctx.log),
      retryConfig: { retries: 0 },
    }).users.info({ user: userId });
    if (!r.user) return `Slack did not answer who "${userId}" is in team ${teamId}`;
    if (r.user.deleted) return `user "${userId}" is deactivated in team ${teamId}`;
    if (r.user.is_bot || r.user.id === "USLACKBOT")
      return `user "${userId}" is a bot in team ${teamId}, not a person who can sign in`;
    return undefined;
  } catch (err) {
    const code = slackErrorCode(err);
    if (code === "user_not_found") return `unknown user "${userId}" in team ${teamId} (Slack: user_not_found)`;
    return `could not verify user "${userId}" with Slack (${code})`;
  }
}
