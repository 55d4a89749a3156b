import type http from "node:http";
import { App, HTTPReceiver, LogLevel, type App as BoltApp } from "@slack/bolt";
import type { SlackConfig } from "../config/env.js";
import type { Logger as OurLogger } from "../log/logger.js";
import { WebClientSlackApi, type SlackApi } from "./slack-api.js";

/** A plain Node request handler: the broker's HTTP server (a layer above) mounts it at /slack/events. */
export type SlackEventsHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A running (or startable) Bolt app and the Slack API port built from its client. */
export interface SlackRuntime {
  readonly app: BoltApp;
  readonly api: SlackApi;
  readonly mode: "http" | "socket";
  /** In HTTP mode: the handler to mount at /slack/events on the broker's HTTP server. */
  readonly httpHandler: SlackEventsHandler | undefined;
  /** Starts Socket Mode (no-op in HTTP mode: the broker's server receives requests). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Bolt's logger, fed into ours (Bolt's messages carry no secrets we pass it, but stay at warn). */
function boltLogger(log: OurLogger) {
  let level = LogLevel.WARN;
  return {
    debug: () => {},
    info: () => {},
    warn: (...m: unknown[]) => log.warn("slack", { detail: m.map(String).join(" ").slice(0, 300) }),
    error: (...m: unknown[]) => log.error("slack", { detail: m.map(String).join(" ").slice(0, 300) }),
    setLevel: (l: typeof level) => void (level = l),
    getLevel: () => level,
    setName: () => {},
  };
}

/**
 * Builds the Bolt app from config: HTTP mode (signature-verified requests on the broker's own
 * server at /slack/events) or Socket Mode (app token). Every Web API call goes to `apiUrl` when set.
 */
export function createSlackRuntime(cfg: SlackConfig, log: OurLogger): SlackRuntime {
  if (!cfg.botToken) throw new Error("SLACK_BOT_TOKEN is required for the Slack app");
  // Bounded retries: an approval must fail closed quickly when Slack is unreachable, not retry for 30 minutes.
  const clientOptions = {
    ...(cfg.apiUrl ? { slackApiUrl: cfg.apiUrl.endsWith("/") ? cfg.apiUrl : cfg.apiUrl + "/" } : {}),
    retryConfig: { retries: 2, factor: 2, minTimeout: 200, maxTimeout: 1_000 },
    timeout: 10_000,
  };
  const logger = boltLogger(log);
  if (cfg.mode === "socket") {
    if (!cfg.appToken) throw new Error("SLACK_APP_TOKEN is required in Socket Mode");
    const app = new App({
      token: cfg.botToken,
      appToken: cfg.appToken,
      socketMode: true,
      clientOptions,
      installerOptions: { clientOptions },
      tokenVerificationEnabled: false,
      logger,
    });
    return {
      app,
      api: new WebClientSlackApi(app.client),
      mode: "socket",
      httpHandler: undefined,
      start: async () => {
        await app.start();
      },
      stop: async () => {
        await app.stop();
      },
    };
  }
  if (!cfg.signingSecret) throw new Error("SLACK_SIGNING_SECRET is required in HTTP mode");
  const receiver = new HTTPReceiver({ signingSecret: cfg.signingSecret, endpoints: "/slack/events", logger, processBeforeResponse: false });
  const app = new App({ token: cfg.botToken, receiver, clientOptions, tokenVerificationEnabled: false, logger });
  const listener = receiver.requestListener as (req: http.IncomingMessage, res: http.ServerResponse) => void;
  return {
    app,
    api: new WebClientSlackApi(app.client),
    mode: "http",
    // Bolt verifies the signature and the timestamp (5 minutes) before any listener runs.
    httpHandler: (req, res) => {
      listener(req, res);
    },
    start: async () => {},
    stop: async () => {},
  };
}
