import { LRUCache } from "lru-cache";
import type { AuditEvent } from "../audit/event.js";
import type { Installation } from "../store/installation-records.js";
import { InstallationError } from "./errors.js";
import type { InstallationsDeps, TokenRotation } from "./installation-ports.js";

// Slack's token rotation for one installation at a time: a rotating bot token lives 12 hours and
// its refresh token works once, so a refresh runs once in this process (the in-flight map) and once
// across replicas (the shared refresh lock, then a re-read of the row: another replica may have
// refreshed it meanwhile). A refusal is never hidden behind a stale token.

/** Installations whose last refresh failed transiently, remembered at once. */
const MAX_FAILURES = 10_000;

/** What a refresh needs: the store, the vault, Slack, and the service's own rules. */
export interface TokenRefreshDeps extends Omit<InstallationsDeps, "orgTeams"> {
  /** The installation if it may serve, else the refusal (Installations' rule). */
  readonly usable: (found: Installation | undefined, who: string) => Installation;
  /** Whether its token is within the refresh margin. */
  readonly due: (i: { tokenExpiresAt: number | null }) => boolean;
  /** Drops what the service holds for the installation (its opened token). */
  readonly forget: (installationId: string) => void;
}

/** Refreshes rotating installation tokens, once each. */
export class TokenRefresh {
  private readonly refreshing = new Map<string, Promise<Installation>>();
  // installation id → when its last refresh failed transiently.
  private readonly failedAt = new LRUCache<string, number>({ max: MAX_FAILURES });

  constructor(private readonly d: TokenRefreshDeps) {}

  /** Forgets a transient failure (a reinstall brought new tokens). */
  forgetFailure(installationId: string): void {
    this.failedAt.delete(installationId);
  }

  /** One refresh per installation: in this process by the in-flight map, across replicas by the lock and a re-read. */
  refresh(inst: Installation): Promise<Installation> {
    const running = this.refreshing.get(inst.id);
    if (running) return running;
    const p = this.d.lock
      .withLock(`slack-installation:${inst.id}`, async () => {
        const current = await this.d.repo.get(inst.id);
        const live = this.d.usable(current, inst.teamId ?? inst.enterpriseId ?? inst.id);
        // Another replica refreshed it while this one waited: its new token is in the row.
        if (!this.d.due(live)) return live;
        return this.rotate(live);
      })
      .finally(() => this.refreshing.delete(inst.id));
    this.refreshing.set(inst.id, p);
    return p;
  }

  private async rotate(inst: Installation): Promise<Installation> {
    const now = this.d.clock.now();
    const base: AuditEvent = {
      at: now,
      event: "installation_token_refreshed",
      teamId: inst.teamId ?? inst.enterpriseId ?? "",
      actor: "system",
    };
    const failedAt = this.failedAt.get(inst.id);
    // A failing refresh is retried once a minute, not on every Slack call.
    if (failedAt !== undefined && now - failedAt < REFRESH_RETRY_MS) return this.stillValid(inst, now);
    const opened = this.d.sealer.open(inst.sealed, inst);
    if (!this.d.rotation || !opened.refreshToken) return this.refreshFailed(inst, base, "no_refresh_token", true);
    let r: Awaited<ReturnType<TokenRotation["refresh"]>>;
    try {
      r = await this.d.rotation.refresh(opened.refreshToken);
    } catch (err) {
      const code = slackErrorCode(err);
      return this.refreshFailed(inst, base, code, PERMANENT_REFRESH_ERRORS.has(code));
    }
    const sealed = this.d.sealer.seal({ botToken: r.botToken, refreshToken: r.refreshToken }, inst);
    if (!(await this.d.repo.updateTokens(inst.id, sealed, now + r.expiresInSeconds * 1000, now, [base]))) {
      throw new InstallationError("unknown_installation", "the installation was removed during its refresh");
    }
    this.failedAt.delete(inst.id);
    this.d.forget(inst.id);
    this.d.onRefresh?.("ok");
    return this.d.usable(await this.d.repo.get(inst.id), inst.id);
  }

  /**
   * A refresh that failed is surfaced (audit row, metric, log) and never hidden behind a stale token:
   * a permanent refusal (the refresh token is spent or revoked) disables the installation; a transient
   * one keeps the current token only while it is still valid.
   */
  private async refreshFailed(
    inst: Installation,
    base: AuditEvent,
    code: string,
    permanent: boolean,
  ): Promise<Installation> {
    const now = this.d.clock.now();
    this.d.onRefresh?.("failed");
    this.d.log.warn("slack installation token refresh failed", { installationId: inst.id, error: code, permanent });
    if (permanent) {
      await this.d.repo.setStatus(inst.id, "disabled", "refresh_failed", now, [
        { ...base, event: "installation_disabled", decision: "refresh_failed", errorCode: code },
      ]);
      this.d.forget(inst.id);
      throw new InstallationError(
        "refresh_failed",
        "the installation's bot token could not be refreshed; it is disabled until the app is reinstalled",
      );
    }
    this.failedAt.set(inst.id, now);
    await this.d.audit.append([{ ...base, decision: "failed", errorCode: code }]);
    return this.stillValid(inst, now);
  }

  private stillValid(inst: Installation, now: number): Installation {
    if (inst.tokenExpiresAt !== null && inst.tokenExpiresAt <= now)
      throw new InstallationError(
        "refresh_failed",
        "the installation's bot token expired and could not be refreshed yet",
      );
    return inst;
  }
}

/** Refresh answers that no retry can fix. */
const PERMANENT_REFRESH_ERRORS: ReadonlySet<string> = new Set([
  "invalid_refresh_token",
  "invalid_grant_type",
  "invalid_client_id",
  "bad_client_secret",
  "token_revoked",
  "app_uninstalled",
  "no_refresh_token",
]);

/** How long a transiently failed refresh waits before it is tried again. */
const REFRESH_RETRY_MS = 60_000;

/** Slack's error code of a WebClient failure (`data.error`), else a network code; never a message that could carry a token. */
export function slackErrorCode(err: unknown): string {
  const data = (err as { data?: { error?: unknown } } | undefined)?.data;
  if (typeof data?.error === "string") return data.error.slice(0, 64);
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === "string" ? code.slice(0, 64) : "request_failed";
}
