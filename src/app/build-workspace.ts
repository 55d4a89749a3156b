import type { ApprovalChannel } from "../approvals/channel.js";
import { ChannelMembership } from "../membership/channel-membership.js";
import { CachedMembership, type MembershipSource } from "../membership/membership.js";
import type { Parts } from "./parts.js";
import { type BuiltWorkspace, buildWorkspace } from "./workspace.js";

// The workspace builder: the Slack or local adapter set (or none), which is the membership source,
// the approval channel, the consent port, the admin directory and the owner notices. Nothing of it
// runs yet (Slack's receiver starts once the server listens), so it has no stop of its own.

/** The built workspace and what the broker and login take from it (overridable by AppOptions). */
export interface WorkspaceStage {
  readonly workspace: BuiltWorkspace;
  readonly membership: MembershipSource | undefined;
  readonly approvalChannel: ApprovalChannel | undefined;
  /** The membership cache, when there is one: cluster signals invalidate it, a sweep job ages it. */
  readonly membershipCache: CachedMembership | ChannelMembership | undefined;
}

/** Builds the workspace `core.choice` names. */
export function buildWorkspaceStage(p: Pick<Parts, "core" | "topology">): WorkspaceStage {
  const { core, topology } = p;
  const { opts, config, store, vault, registry, clock, log, metrics } = core;
  const workspace = buildWorkspace(core.choice, {
    config,
    store,
    vault,
    refreshLock: topology.refreshLock,
    registry,
    clock,
    log,
    onInstallationRefresh: (o) => metrics.slackTokenRefreshed(o),
  });
  const membership = opts.membership ?? workspace.adapters?.membership;
  if (!membership) {
    const why = "every tool call is refused as not_member until Slack is set up";
    log.warn(`no channel membership source (Slack not configured): ${why}`);
  }
  const cached = membership instanceof CachedMembership || membership instanceof ChannelMembership;
  return {
    workspace,
    membership,
    approvalChannel: opts.approvalChannel ?? workspace.adapters?.approvals,
    membershipCache: cached ? membership : undefined,
  };
}
