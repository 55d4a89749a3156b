import type { Logger } from "../log/logger.js";
import type { InstallationHealth } from "../store/installation-records.js";

/** Why the broker is not ready, or "ok" per condition: the body of GET /readyz. */
export interface ReadinessReport {
  readonly ready: boolean;
  readonly checks: {
    readonly database: string;
    readonly registry: string;
    readonly slack: string;
    readonly installations?: InstallationHealth;
  };
}

/** Slack's authentication as last checked: `auth.test` must have succeeded with the configured token. */
export class SlackAuthState {
  private state: "pending" | "ok" | "failed" = "pending";
  private reason = "not checked yet";
  private running: Promise<void> | undefined;

  constructor(
    private readonly authTest: () => Promise<unknown>,
    private readonly log: Logger,
  ) {}

  /** "ok", or why not (a Slack error code, never the token). */
  get status(): string {
    return this.state === "ok" ? "ok" : `${this.state}: ${this.reason}`;
  }

  /** Calls auth.test once (concurrent callers share the call); a failure marks Slack not ready. */
  check(): Promise<void> {
    this.running ??= (async () => {
      try {
        await this.authTest();
        if (this.state !== "ok") this.log.info("slack authenticated (auth.test ok)");
        this.state = "ok";
        this.reason = "";
      } catch (err) {
        // The WebClient's error carries Slack's code (invalid_auth, account_inactive…), not the token.
        const code =
          (err as { data?: { error?: unknown }; code?: unknown }).data?.error ??
          (err as { code?: unknown }).code ??
          "error";
        this.reason =
          String(code)
            .replace(/[^A-Za-z0-9_.:-]/g, "")
            .slice(0, 60) || "error";
        if (this.state !== "failed") this.log.warn("slack authentication failed: not ready", { code: this.reason });
        this.state = "failed";
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }
}

/**
 * Readiness: the database open at the current schema (migrations ran at start and it answers),
 * the service registry loaded with at least one service, and Slack (when configured) authenticated.
 */
export class Readiness {
  constructor(
    private readonly parts: {
      readonly dbAnswers: () => Promise<boolean>;
      readonly services: () => number;
      readonly slack: SlackAuthState | undefined;
      /** The installations' health, when Slack serves tenants; a failure to read it reads as unknown. */
      readonly installations?: () => Promise<InstallationHealth>;
    },
  ) {}

  async report(): Promise<ReadinessReport> {
    const database = (await this.parts.dbAnswers()) ? "ok" : "unavailable";
    const n = this.parts.services();
    const registry = n > 0 ? "ok" : "no services loaded";
    const slack = this.parts.slack ? this.parts.slack.status : "not configured";
    const ready = database === "ok" && registry === "ok" && (slack === "ok" || slack === "not configured");
    const installations =
      database === "ok" && this.parts.installations
        ? await this.parts.installations().catch(() => undefined)
        : undefined;
    return { ready, checks: { database, registry, slack, ...(installations ? { installations } : {}) } };
  }
}
