import type { ApprovalService } from "../approvals/approval-service.js";
import type { Clock } from "../clock/clock.js";
import type { Config } from "../config/env.js";
import { ConfigError } from "../config/errors.js";
import type { ServiceRegistry } from "../config/registry.js";
import type { ConnectionLifecycle } from "../connections/lifecycle.js";
import { errorMessage } from "../domain/errors.js";
import { vaultSealer } from "../installations/installation-ports.js";
import { Installations } from "../installations/installations.js";
import { slackErrorCode } from "../installations/token-refresh.js";
import type { Logger } from "../log/logger.js";
import type { LoginService } from "../login/login-service.js";
import type { RefreshLock } from "../login/oauth/refresh-lock.js";
import { ChannelMembership } from "../membership/channel-membership.js";
import { AdminDirectory } from "../slack/admins.js";
import { SlackApprovalChannel } from "../slack/approval-channel.js";
import { SlackConsent } from "../slack/consent.js";
import { SlackOrgTeams, SlackTokenRotation, singleTokenInstall } from "../slack/installation-adapters.js";
import { SlackOwnerNotices } from "../slack/login-notifier.js";
import { SlackMembership } from "../slack/membership.js";
import { createSlackRuntime, type SlackRuntime, slackClientOptions } from "../slack/slack-app.js";
import type { Store } from "../store/store.js";
import type { Vault } from "../vault/vault.js";
import { chooseWorkspace, type WorkspaceChoice } from "../workspace/choice.js";
import { endNotice, localAdapters } from "../workspace/local/adapters.js";
import { type LocalWorkspaceLimits, LocalWorkspaceService } from "../workspace/local/local-workspace.js";
import type { WorkspaceAdapters } from "../workspace/workspace.js";

// The composition root's half for workspaces: the one place that builds the Slack or the local
// adapter set (or none) from config. app.ts wires whatever this returns into the broker and login.

/** The workspace this start runs; throws ConfigError (naming the Slack variables) when it must not start. */
export function workspaceChoiceOrThrow(config: Config): Exclude<WorkspaceChoice, { kind: "refused" }> {
  const choice = chooseWorkspace(config);
  if (choice.kind === "refused") throw new ConfigError("invalid_env", choice.message);
  return choice;
}

/** The built workspace: its adapters (none when `kind` is `none`), and the Slack runtime or local workspace behind them. */
export interface BuiltWorkspace {
  readonly kind: "slack" | "local" | "none";
  readonly adapters: WorkspaceAdapters | undefined;
  readonly slack: SlackRuntime | undefined;
  /** The tenants Slack serves (undefined without Slack: the local workspace is its one team). */
  readonly installations: Installations | undefined;
  readonly local: LocalWorkspaceService | undefined;
  /** Binds what is built after the adapters (the broker's approvals, the login service) and seeds the local team. */
  start(late: { approvals: ApprovalService; logins: LoginService; lifecycle: ConnectionLifecycle }): Promise<void>;
}

/** What a workspace adapter set is built from. */
export interface WorkspaceDeps {
  readonly config: Config;
  readonly store: Store;
  readonly vault: Vault;
  readonly refreshLock: RefreshLock;
  readonly registry: ServiceRegistry;
  readonly clock: Clock;
  readonly log: Logger;
  readonly localLimits?: Partial<LocalWorkspaceLimits>;
  readonly onInstallationRefresh?: (outcome: "ok" | "failed") => void;
}

/** Why this workspace was chosen (logged at its start). */
type Chosen = { readonly why: string };

/** Builds the adapter set `choice` names. */
export function buildWorkspace(
  choice: Exclude<WorkspaceChoice, { kind: "refused" }>,
  deps: WorkspaceDeps,
): BuiltWorkspace {
  if (choice.kind === "slack") return slackWorkspace(choice, deps);
  if (choice.kind === "local") return localWorkspace(choice, deps);
  const { log } = deps;
  return {
    kind: "none",
    adapters: undefined,
    slack: undefined,
    installations: undefined,
    local: undefined,
    start: async () => log.info("workspace: none", { why: choice.why }),
  };
}

/** Slack's installations, its runtime (Bolt) and the Slack adapter set over them. */
function slackWorkspace(choice: Chosen, deps: WorkspaceDeps): BuiltWorkspace {
  const { config, store, vault, registry, clock, log } = deps;
  const clientOptions = slackClientOptions(config.slack, log);
  const dist = config.slack.distribution;
  const installations = new Installations({
    repo: store.installations,
    sealer: vaultSealer(vault),
    clock,
    log,
    audit: store.audit,
    lock: deps.refreshLock,
    ...(dist ? { rotation: new SlackTokenRotation(dist, clientOptions) } : {}),
    orgTeams: new SlackOrgTeams(clientOptions),
    ...(deps.onInstallationRefresh ? { onRefresh: deps.onInstallationRefresh } : {}),
  });
  const slack = createSlackRuntime(config.slack, { installations, audit: store.audit, clock, log });
  const tenants = { single: async () => (await store.installations.countLive()) <= 1 };
  const membershipCache = { ttlMs: config.caches.membership.ttlMs, maxChannels: config.caches.membership.max };
  const adapters: WorkspaceAdapters = {
    kind: "slack",
    membership: new ChannelMembership(new SlackMembership(slack.apis), clock, membershipCache),
    approvals: new SlackApprovalChannel(slack.apis, store, log, config.approvalTimeoutMs),
    consent: new SlackConsent(slack.apis, registry),
    // The one admin directory (one cache): the Slack handlers and the grants service both ask it.
    admins: new AdminDirectory(config.admins, slack.apis, tenants, clock),
    notices: new SlackOwnerNotices(slack.apis),
  };
  const botToken = config.slack.botToken;
  const start = async (): Promise<void> => {
    // A single SLACK_BOT_TOKEN is simply the one installation (auth.test once); Slack down at
    // start leaves it unrecorded, so its calls fail closed until the next try (the auth check job).
    if (botToken) await recordConfiguredToken(installations, botToken, clientOptions, log);
    log.info("workspace: slack", { why: choice.why, mode: slack.mode, installFlow: Boolean(dist) });
  };
  return { kind: "slack", adapters, slack, installations, local: undefined, start };
}

/** The local workspace (development only; its state in the database) and its adapter set. */
function localWorkspace(choice: Chosen, deps: WorkspaceDeps): BuiltWorkspace {
  const { config, store, registry, clock, log } = deps;
  const limits = deps.localLimits ? { limits: deps.localLimits } : {};
  const local = new LocalWorkspaceService({ store, clock, log, registry, admins: config.admins, ...limits });
  const adapters = localAdapters(local, { registry, log, store, approvalTimeoutMs: config.approvalTimeoutMs });
  const start: BuiltWorkspace["start"] = async ({ approvals, logins, lifecycle }) => {
    local.bind({ approvals, logins });
    const seeded = await local.seed();
    // Slack tells owners about an admin revoke from its handler; here every end that the owner
    // did not cause becomes a card in their inbox.
    lifecycle.onEnded(async (c) => {
      const revoked = { connectionId: c.id, event: "connection_revoked", take: "latest", limit: 1 } as const;
      const rows = c.status === "revoked" ? await store.audit.query(revoked) : [];
      const end = endNotice(c, rows[0]?.actor);
      if (!end) return;
      await adapters.notices.connectionEnded(c, end).catch((err: unknown) => {
        log.warn("could not tell the owner their connection ended", {
          connectionId: c.id,
          error: errorMessage(err),
        });
      });
    });
    log.info("workspace: local (development only; state in the database)", {
      why: choice.why,
      team: local.teamId,
      seeded,
    });
  };
  return { kind: "local", adapters, slack: undefined, installations: undefined, local, start };
}

/** Records SLACK_BOT_TOKEN as an installation; false (logged, never thrown) when Slack could not be asked. */
export async function recordConfiguredToken(
  installations: Installations,
  botToken: string,
  clientOptions: ReturnType<typeof slackClientOptions>,
  log: Logger,
): Promise<boolean> {
  try {
    await installations.ensureConfigured(await singleTokenInstall(botToken, clientOptions));
    return true;
  } catch (err) {
    log.warn(
      "SLACK_BOT_TOKEN could not be recorded as an installation (auth.test failed); retrying with the Slack auth check",
      { code: slackErrorCode(err) },
    );
    return false;
  }
}
