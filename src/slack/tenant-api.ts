import { WebClient, type WebClientOptions } from "@slack/web-api";
import { LRUCache } from "lru-cache";
import type { Installations } from "../installations/installations.js";
import { type SlackApi, WebClientSlackApi } from "./slack-api.js";

// Every Slack call of a tenant goes out with that tenant's own bot token: the one way code reaches
// Slack for a team is `forTeam(teamId)`, which resolves the installation serving that team and
// fails closed (InstallationError) when none is active. A token is never shared across teams.

/** Slack's Web API per tenant. */
export interface SlackApis {
  /** The API bound to the installation serving `teamId`; throws InstallationError when none is active. */
  forTeam(teamId: string): Promise<SlackApi>;
}

/** One API for every team: tests and the embedded library, where a single fake serves one team. */
export function singleSlackApi(api: SlackApi): SlackApis {
  return { forTeam: async () => api };
}

/** WebClients kept at once (one per installation's current token). */
const MAX_CLIENTS = 1_000;

/** The production adapter: the installation's current (refreshed) token, one WebClient per token. */
export class InstallationSlackApis implements SlackApis {
  // Keyed by installation id; replaced when its token changes (a refresh), so a superseded token is never used again.
  private readonly clients = new LRUCache<string, { token: string; api: SlackApi }>({ max: MAX_CLIENTS });

  constructor(
    private readonly installations: Installations,
    private readonly clientOptions: WebClientOptions,
  ) {}

  async forTeam(teamId: string): Promise<SlackApi> {
    const { installation, botToken } = await this.installations.tokenForTeam(teamId);
    const held = this.clients.get(installation.id);
    if (held && held.token === botToken) return held.api;
    const api = new WebClientSlackApi(new WebClient(botToken, this.clientOptions));
    this.clients.set(installation.id, { token: botToken, api });
    return api;
  }
}
