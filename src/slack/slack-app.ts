import type http from "node:http";
import {
  App,
  type AuthorizeResult,
  type AuthorizeSourceData,
  type App as BoltApp,
  ErrorCode,
  HTTPReceiver,
  LogLevel,
} from "@slack/bolt";
import type { WebClientOptions } from "@slack/web-api";
import type { AuditEvent } from "../audit/event.js";
import type { Clock } from "../clock/clock.js";
import type { SlackConfig } from "../config/env.js";
import { ConfigError } from "../config/errors.js";
import { InstallationError } from "../installations/errors.js";
import type { Installations } from "../installations/installations.js";
import type { Logger as OurLogger } from "../log/logger.js";
import { InstallationSlackApis, type SlackApis } from "./tenant-api.js";

/** A plain Node request handler: the broker's HTTP server (a layer above) mounts it at /slack/events. */
export type SlackEventsHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A running (or startable) Bolt app and the per-tenant Slack API built beside it. */
export interface SlackRuntime {
  readonly app: BoltApp;
  /** Every Slack call, with the token of the tenant it is for. */
  readonly apis: SlackApis;
  readonly mode: "http" | "socket";
  /** In HTTP mode: the handler to mount at /slack/events on the broker's HTTP server. */
  readonly httpHandler: SlackEventsHandler | undefined;
  /** The Web API options every client uses (base URL, bounded retries). */
  readonly clientOptions: WebClientOptions;
  /** Starts Socket Mode (no-op in HTTP mode: the broker's server receives requests). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A Slack library's logger (Bolt's, @slack/oauth's), fed into ours at warn and above (their messages
 * carry no secrets we pass them). `errorsAs`: the level their errors are logged at (the install flow
 * logs a replayed or expired state as an error; for us it is a warning).
 */
export function slackLibraryLogger(log: OurLogger, msg = "slack", errorsAs: "error" | "warn" = "error") {
  let level = LogLevel.WARN;
  return {
    debug: () => {},
    info: () => {},
    warn: (...m: unknown[]) => log.warn(msg, { detail: m.map(String).join(" ").slice(0, 300) }),
    error: (...m: unknown[]) => log[errorsAs](msg, { detail: m.map(String).join(" ").slice(0, 300) }),
    setLevel: (l: typeof level) => {
      level = l;
    },
    getLevel: () => level,
    setName: () => {},
  };
}

/** The Web API options for every client: SLACK_API_URL when set, bounded retries and timeout. */
export function slackClientOptions(cfg: Pick<SlackConfig, "apiUrl">, log: OurLogger): WebClientOptions {
  // Bounded retries: an approval must fail closed quickly when Slack is unreachable, not retry for 30 minutes.
  return {
    ...(cfg.apiUrl ? { slackApiUrl: cfg.apiUrl.endsWith("/") ? cfg.apiUrl : `${cfg.apiUrl}/` } : {}),
    retryConfig: { retries: 2, factor: 2, minTimeout: 200, maxTimeout: 1_000 },
    timeout: 10_000,
    logger: slackLibraryLogger(log),
  };
}

/** What the runtime resolves tenants with. */
export interface SlackRuntimeDeps {
  readonly installations: Installations;
  readonly audit: { append(events: readonly AuditEvent[]): Promise<void> };
  readonly clock: Clock;
  readonly log: OurLogger;
}

/**
 * Bolt's `authorize`: every incoming event, command, action and view is resolved to the installation
 * serving it (the org-wide install first, then the team's own) and gets that installation's token.
 * An unknown, disabled or uninstalled tenant is refused: Bolt acks and runs no listener, nothing is
 * sent to Slack, and the refusal is audited.
 */
export function tenantAuthorize(
  d: SlackRuntimeDeps,
): (source: AuthorizeSourceData<boolean>) => Promise<AuthorizeResult> {
  return async (source) => {
    try {
      const inst = await d.installations.resolve({
        enterpriseId: source.enterpriseId ?? null,
        teamId: source.teamId ?? null,
      });
      const { botToken } = await d.installations.token(inst);
      return {
        botToken,
        botId: inst.botId,
        botUserId: inst.botUserId,
        ...(source.teamId ? { teamId: source.teamId } : {}),
        ...(inst.enterpriseId ? { enterpriseId: inst.enterpriseId } : {}),
        installationId: inst.id,
      };
    } catch (err) {
      const code = err instanceof InstallationError ? err.code : "authorize_failed";
      await d.audit
        .append([
          {
            at: d.clock.now(),
            event: "installation_refused",
            teamId: source.teamId ?? source.enterpriseId ?? "",
            actor: "slack",
            decision: code,
          },
        ])
        .catch(() => {});
      d.log.warn("slack request refused: no active installation serves it", {
        team: source.teamId ?? null,
        enterprise: source.enterpriseId ?? null,
        code,
      });
      throw err;
    }
  };
}

/**
 * A refused tenant is acked like any request Slack sent in good faith (no retries, no listener):
 * Bolt's default error handler would rethrow the authorization failure and its HTTP receiver answer
 * 401. Every other error keeps Bolt's handling.
 */
function ackRefusedTenants(app: BoltApp): void {
  app.error(async (err) => {
    if ((err as { code?: unknown }).code === ErrorCode.AuthorizationError) return;
    throw err;
  });
}

/**
 * Builds the Bolt app: HTTP mode (signature-verified requests on the broker's own server at
 * /slack/events) or Socket Mode (app token), always with the product's own `authorize`, so every
 * listener runs with the token of the tenant the request came from.
 */
export function createSlackRuntime(cfg: SlackConfig, d: SlackRuntimeDeps): SlackRuntime {
  if (!cfg.botToken && !cfg.distribution)
    throw new ConfigError(
      "invalid_env",
      "the Slack app needs SLACK_BOT_TOKEN, or SLACK_CLIENT_ID, SLACK_CLIENT_SECRET and SLACK_STATE_SECRET for the install flow",
    );
  const clientOptions = slackClientOptions(cfg, d.log);
  const logger = slackLibraryLogger(d.log);
  const authorize = tenantAuthorize(d);
  const apis = new InstallationSlackApis(d.installations, clientOptions);
  if (cfg.mode === "socket") {
    if (!cfg.appToken) throw new ConfigError("invalid_env", "SLACK_APP_TOKEN is required in Socket Mode");
    const app = new App({
      authorize,
      appToken: cfg.appToken,
      socketMode: true,
      clientOptions,
      installerOptions: { clientOptions },
      logger,
    });
    ackRefusedTenants(app);
    return {
      app,
      apis,
      mode: "socket",
      httpHandler: undefined,
      clientOptions,
      start: async () => {
        await app.start();
      },
      stop: async () => {
        await app.stop();
      },
    };
  }
  if (!cfg.signingSecret) throw new ConfigError("invalid_env", "SLACK_SIGNING_SECRET is required in HTTP mode");
  const receiver = new HTTPReceiver({
    signingSecret: cfg.signingSecret,
    endpoints: "/slack/events",
    logger,
    processBeforeResponse: false,
  });
  const app = new App({ authorize, receiver, clientOptions, logger });
  ackRefusedTenants(app);
  const listener = receiver.requestListener as (req: http.IncomingMessage, res: http.ServerResponse) => void;
  return {
    app,
    apis,
    mode: "http",
    // Bolt verifies the signature and the timestamp (5 minutes) before any listener runs.
    httpHandler: (req, res) => {
      listener(req, res);
    },
    clientOptions,
    start: async () => {},
    stop: async () => {},
  };
}
