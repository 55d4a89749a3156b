import { WebClient, type WebClientOptions } from "@slack/web-api";
import { z } from "zod";
import type { SlackDistribution } from "../config/env.js";
import type { InstallInput, OrgTeams, TokenRotation } from "../installations/installation-ports.js";
import { SlackApiError } from "./errors.js";

// Slack's side of the installation ports: token rotation (oauth.v2.access with a refresh token),
// the workspaces of an org-wide install (auth.teams.list), and the single configured bot token read
// as an installation (auth.test). Answers are parsed, never cast; errors carry Slack's code only.

const slackId = z.string().regex(/^[A-Z0-9]{2,32}$/);
const refreshAnswer = z.object({
  access_token: z.string().min(1),
  refresh_token: z.string().min(1),
  expires_in: z.number().int().positive(),
});
const teamsPage = z.object({
  teams: z.array(z.object({ id: slackId })).max(1_000),
  response_metadata: z.object({ next_cursor: z.string().optional() }).optional(),
});
const authTestAnswer = z.object({
  team_id: slackId,
  team: z.string().max(256).optional(),
  user_id: slackId,
  bot_id: slackId,
  enterprise_id: slackId.nullish(),
  is_enterprise_install: z.boolean().optional(),
  app_id: slackId.optional(),
  response_metadata: z.object({ scopes: z.array(z.string().max(128)).max(200).optional() }).optional(),
});

/** Pages of auth.teams.list read at most (1,000 workspaces each). */
const MAX_TEAM_PAGES = 100;

/** Token rotation over oauth.v2.access (the app's client id and secret). */
export class SlackTokenRotation implements TokenRotation {
  private readonly client: WebClient;
  constructor(
    private readonly dist: Pick<SlackDistribution, "clientId" | "clientSecret">,
    options: WebClientOptions,
  ) {
    this.client = new WebClient(undefined, options);
  }

  async refresh(refreshToken: string): Promise<{ botToken: string; refreshToken: string; expiresInSeconds: number }> {
    const r = refreshAnswer.parse(
      await this.client.apiCall("oauth.v2.access", {
        client_id: this.dist.clientId,
        client_secret: this.dist.clientSecret,
        grant_type: "refresh_token",
        refresh_token: refreshToken,
      }),
    );
    return { botToken: r.access_token, refreshToken: r.refresh_token, expiresInSeconds: r.expires_in };
  }
}

/** The workspaces an org-wide install serves. */
export class SlackOrgTeams implements OrgTeams {
  constructor(private readonly options: WebClientOptions) {}

  async teamsOf(botToken: string): Promise<readonly string[]> {
    const client = new WebClient(botToken, this.options);
    const out: string[] = [];
    let pages = 0;
    for await (const page of client.paginate("auth.teams.list", { limit: 1000 })) {
      if (++pages > MAX_TEAM_PAGES)
        throw new SlackApiError("too_many_pages", `auth.teams.list: more than ${MAX_TEAM_PAGES} pages`);
      out.push(...teamsPage.parse(page).teams.map((t) => t.id));
    }
    return out;
  }
}

/** The single SLACK_BOT_TOKEN read as an installation (auth.test once), so it runs through the same per-installation path. */
export async function singleTokenInstall(botToken: string, options: WebClientOptions): Promise<InstallInput> {
  const client = new WebClient(botToken, options);
  const r = authTestAnswer.parse(await client.auth.test());
  const org = r.is_enterprise_install === true;
  return {
    enterpriseId: r.enterprise_id ?? null,
    enterpriseName: null,
    teamId: org ? null : r.team_id,
    teamName: r.team ?? null,
    isEnterpriseInstall: org,
    appId: r.app_id ?? "configured",
    botId: r.bot_id,
    botUserId: r.user_id,
    scopes: r.response_metadata?.scopes ?? [],
    tokens: { botToken },
    tokenExpiresAt: null,
    installedBy: null,
  };
}
