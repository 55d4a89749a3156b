import { createHmac, randomBytes } from "node:crypto";
import type http from "node:http";
import {
  InstallProvider,
  type InstallURLOptions,
  InvalidStateError,
  type Installation as SlackInstallation,
  type StateStore,
} from "@slack/oauth";
import { WebClient, type WebClientOptions } from "@slack/web-api";
import { z } from "zod";
import type { AuditEvent } from "../audit/event.js";
import type { Clock } from "../clock/clock.js";
import type { SlackDistribution } from "../config/env.js";
import type { InstallInput } from "../installations/installation-ports.js";
import type { Installations } from "../installations/installations.js";
import type { Logger } from "../log/logger.js";
import type { OAuthStateRepo } from "../store/installation-records.js";
import { requiredBotScopes } from "./scopes.js";
import { slackLibraryLogger } from "./slack-app.js";

// Slack's install flow with Bolt's own machinery (@slack/oauth's InstallProvider): GET /slack/install
// sets the state cookie and redirects to Slack's authorize page; GET /slack/oauth_redirect checks the
// cookie against the state, takes the state from the database (single use, so any replica can finish
// a flow another started and a replayed state exchanges nothing), exchanges the code, refuses tenants
// outside the allowlist, and seals the installation in the vault. No token is logged or shown.

/** Bolt's default paths, served on the broker's own HTTP server in both Slack modes. */
export const INSTALL_PATH = "/slack/install";
export const REDIRECT_PATH = "/slack/oauth_redirect";

/** How long an install may take between /slack/install and Slack's redirect back. */
export const STATE_TTL_MS = 10 * 60_000;

const installOptions = z
  .object({ scopes: z.array(z.string().max(128)).max(100), redirectUri: z.string().url().max(2048).optional() })
  .strict();

/** What the flow needs. */
export interface InstallFlowDeps {
  readonly distribution: SlackDistribution;
  readonly publicUrl: string;
  readonly clientOptions: WebClientOptions;
  readonly states: OAuthStateRepo;
  readonly installations: Pick<Installations, "record">;
  readonly audit: { append(events: readonly AuditEvent[]): Promise<void> };
  readonly clock: Clock;
  readonly log: Logger;
}

/** The two request handlers to mount. */
export interface InstallFlow {
  readonly install: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>;
  readonly callback: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>;
}

/** States in the database: only a keyed hash of each is stored, and taking one deletes it. */
export class DatabaseStateStore implements StateStore {
  constructor(
    private readonly states: OAuthStateRepo,
    private readonly secret: string,
    private readonly clock: Clock,
  ) {}

  async generateStateParam(options: InstallURLOptions): Promise<string> {
    const state = randomBytes(32).toString("base64url");
    const now = this.clock.now();
    const payload = JSON.stringify({
      scopes: options.scopes,
      ...(options.redirectUri ? { redirectUri: options.redirectUri } : {}),
    });
    await this.states.put(this.hash(state), payload, now + STATE_TTL_MS, now);
    return state;
  }

  async verifyStateParam(_now: Date, state: string): Promise<InstallURLOptions> {
    const payload = state.length <= 128 ? await this.states.take(this.hash(state), this.clock.now()) : undefined;
    if (payload === undefined) throw new InvalidStateError("The state is unknown, already used or expired.");
    const parsed = installOptions.safeParse(JSON.parse(payload));
    if (!parsed.success) throw new InvalidStateError("The stored state is malformed.");
    return { scopes: parsed.data.scopes, ...(parsed.data.redirectUri ? { redirectUri: parsed.data.redirectUri } : {}) };
  }

  private hash(state: string): string {
    return createHmac("sha256", this.secret).update(state).digest("hex");
  }
}

/** Whether `SLAUDE_SLACK_ALLOWED_TEAMS` lets this tenant install (empty: anyone). */
export function installAllowed(
  allowed: readonly string[],
  teamId: string | null,
  enterpriseId: string | null,
): boolean {
  return (
    allowed.length === 0 ||
    (teamId !== null && allowed.includes(teamId)) ||
    (enterpriseId !== null && allowed.includes(enterpriseId))
  );
}

/** Our installation from @slack/oauth's (the bot token is required: slaude-connect is a bot app). */
export function installInput(i: SlackInstallation): InstallInput | undefined {
  if (!i.bot || !i.appId) return undefined;
  const org = i.isEnterpriseInstall === true;
  return {
    enterpriseId: i.enterprise?.id ?? null,
    enterpriseName: i.enterprise?.name ?? null,
    teamId: org ? null : (i.team?.id ?? null),
    teamName: org ? null : (i.team?.name ?? null),
    isEnterpriseInstall: org,
    appId: i.appId,
    botId: i.bot.id,
    botUserId: i.bot.userId,
    scopes: i.bot.scopes,
    tokens: { botToken: i.bot.token, ...(i.bot.refreshToken ? { refreshToken: i.bot.refreshToken } : {}) },
    tokenExpiresAt: i.bot.expiresAt !== undefined ? i.bot.expiresAt * 1000 : null,
    installedBy: i.user.id,
  };
}

function page(res: http.ServerResponse, status: number, title: string, text: string): void {
  res.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "content-security-policy": "default-src 'none'",
  });
  res.end(
    `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1><p>${text}</p></body></html>`,
  );
}

/** Builds the install flow for a distributed app. */
export function createInstallFlow(d: InstallFlowDeps): InstallFlow {
  const redirectUri = `${d.publicUrl}${REDIRECT_PATH}`;
  const provider = new InstallProvider({
    clientId: d.distribution.clientId,
    clientSecret: d.distribution.clientSecret,
    stateStore: new DatabaseStateStore(d.states, d.distribution.stateSecret, d.clock),
    stateVerification: true,
    directInstall: true,
    authorizationUrl: d.distribution.authorizeUrl,
    installUrlOptions: { scopes: requiredBotScopes(), redirectUri },
    clientOptions: d.clientOptions,
    // Only its own record-keeping is left to the provider; fetching goes through our authorize.
    installationStore: {
      storeInstallation: async () => {},
      fetchInstallation: async () =>
        Promise.reject(new Error("not used: slaude-connect authorizes from its own installations")),
    },
    logger: slackLibraryLogger(d.log, "slack oauth", "warn"),
  });
  const callbackOptions = {
    afterInstallation: async (
      i: SlackInstallation,
      _o: InstallURLOptions,
      _req: http.IncomingMessage,
      res: http.ServerResponse,
    ): Promise<boolean> => {
      const input = installInput(i);
      const teamId = input?.teamId ?? null;
      const enterpriseId = input?.enterpriseId ?? null;
      const allowed = input !== undefined && installAllowed(d.distribution.allowedTenants, teamId, enterpriseId);
      if (!allowed) {
        await d.audit.append([
          {
            at: d.clock.now(),
            event: "installation_refused",
            teamId: teamId ?? enterpriseId ?? "",
            actor: `slack:${i.user.id}`,
            decision: input ? "not_allowed" : "no_bot_token",
          },
        ]);
        // The token Slack just issued is given back, so a refused tenant holds nothing of ours.
        if (i.bot?.token) {
          const client = new WebClient(i.bot.token, d.clientOptions);
          await client.auth.revoke().catch(() => {});
        }
        d.log.warn("slack install refused: tenant not in SLAUDE_SLACK_ALLOWED_TEAMS", {
          team: teamId,
          enterprise: enterpriseId,
        });
        page(
          res,
          403,
          "Installation refused",
          "This slaude-connect deployment does not serve your workspace. Ask its operator to allow it.",
        );
        return false;
      }
      await d.installations.record(input, `slack:${i.user.id}`);
      return true;
    },
    success: (_i: SlackInstallation, _o: InstallURLOptions, _req: http.IncomingMessage, res: http.ServerResponse) =>
      page(
        res,
        200,
        "slaude-connect is installed",
        "You can close this page and return to Slack. People connect their accounts with <code>/connect</code>.",
      ),
    failure: (err: { code?: string }, _o: InstallURLOptions, _req: http.IncomingMessage, res: http.ServerResponse) => {
      d.log.warn("slack install failed", { code: err.code ?? "unknown" });
      page(
        res,
        400,
        "Installation failed",
        "The installation could not be completed (it may have expired or been used already). Start again from the install link.",
      );
    },
  };
  return {
    install: (req, res) => provider.handleInstallPath(req, res),
    callback: (req, res) => provider.handleCallback(req, res, callbackOptions),
  };
}
