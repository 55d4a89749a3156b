import type { ApprovalCard } from "../../approvals/card.js";
import type { ApprovalChannel, ApprovalOutcome } from "../../approvals/channel.js";
import type { ConsentNotifier } from "../../broker/ports.js";
import { approvalCard, approvalSettledCard, approvalThreadNote } from "../../cards/approval-cards.js";
import {
  connectionReadyCard,
  consentCard,
  consentUsedCard,
  expiredCard,
  needsLoginCard,
  revokedCard,
} from "../../cards/notice-cards.js";
import type { Service, ServiceRegistry } from "../../config/registry.js";
import { ConnectionError } from "../../connections/errors.js";
import { errorMessage } from "../../domain/errors.js";
import type { ThreadRef } from "../../domain/thread.js";
import type { Logger } from "../../log/logger.js";
import type { MembershipSource } from "../../membership/membership.js";
import type { Approval, Connection, LoginSession } from "../../store/records.js";
import type { Store } from "../../store/store.js";
import type { AdminDirectoryPort, ConnectionEnd, OwnerNotices, WorkspaceAdapters } from "../workspace.js";
import type { LocalWorkspaceService } from "./local-workspace.js";

// The local workspace's adapter for each port Slack implements: the same cards, delivered to an
// inbox in the store instead of a Slack DM, the same thread notes, kept in the store too.

/** Membership from the store's members table, read on every call: a change counts from the next call. */
export class LocalMembership implements MembershipSource {
  constructor(
    private readonly store: Store,
    private readonly teamId: string,
  ) {}
  async isMember(teamId: string, channelId: string, userId: string): Promise<boolean> {
    return teamId === this.teamId && this.store.workspace.isMember(teamId, channelId, userId);
  }
}

/** Approval cards in the owner's inbox, notes in the thread; an owner not in the workspace cannot be asked (fail closed). */
export class LocalApprovalChannel implements ApprovalChannel {
  readonly available = true;
  constructor(
    private readonly ws: LocalWorkspaceService,
    private readonly log: Logger,
    private readonly timeoutMs: number,
  ) {}

  async ask(approval: Approval, card: ApprovalCard): Promise<void> {
    await this.ws.deliver(approval.ownerUserId, approvalCard(card), { approvalId: approval.id });
    await this.note(approval, "asked");
  }

  async settled(approval: Approval, outcome: ApprovalOutcome): Promise<void> {
    await this.ws.settleApproval(approval.id, approvalSettledCard(approval, outcome));
    await this.note(approval, outcome);
  }

  private async note(a: Approval, outcome: ApprovalOutcome | "asked"): Promise<void> {
    try {
      await this.ws.note(
        { teamId: a.teamId, channelId: a.channelId, threadTs: a.threadTs },
        approvalThreadNote(a, outcome, this.timeoutMs),
      );
    } catch (err) {
      // The owner has the card; a missing thread note is worth a log line, not a refusal.
      this.log.warn("could not post the note in the local thread", { approvalId: a.id, error: errorMessage(err) });
    }
  }
}

/** The consent card in the user's own inbox (never the thread); Continue mints the login link. */
export class LocalConsent implements ConsentNotifier {
  constructor(
    private readonly ws: LocalWorkspaceService,
    private readonly registry: ServiceRegistry,
  ) {}
  async sendConsent(thread: ThreadRef, userId: string, serviceName: string): Promise<void> {
    const service = this.registry.get(serviceName);
    if (!service) throw new ConnectionError("unknown_service", `unknown service ${serviceName}`);
    const card = consentCard(service, this.ws.loginAvailable ? { kind: "continue" } : { kind: "unavailable" }, {
      thread,
    });
    await this.ws.deliver(userId, card, {
      subject: { service: service.name, channelId: thread.channelId, threadTs: thread.threadTs },
    });
  }
}

/** Owner notices as inbox cards. */
export class LocalOwnerNotices implements OwnerNotices {
  constructor(private readonly ws: LocalWorkspaceService) {}
  async connectionReady(session: LoginSession, connection: Connection, service: Service): Promise<void> {
    await this.ws.settleConsent(session.userId, service.name, consentUsedCard(service, connection));
    await this.ws.deliver(session.userId, connectionReadyCard(connection, service));
  }
  async needsLogin(connection: Connection): Promise<void> {
    if (connection.ownerUserId) await this.ws.deliver(connection.ownerUserId, needsLoginCard(connection));
  }
  async connectionEnded(connection: Connection, end: ConnectionEnd): Promise<void> {
    if (!connection.ownerUserId) return;
    await this.ws.deliver(
      connection.ownerUserId,
      end.how === "expired" ? expiredCard(connection) : revokedCard(connection, end.by),
    );
  }
}

/** The local adapter set over one LocalWorkspaceService. */
export function localAdapters(
  ws: LocalWorkspaceService,
  deps: { registry: ServiceRegistry; log: Logger; store: Store; approvalTimeoutMs: number },
): WorkspaceAdapters & { readonly local: LocalWorkspaceService } {
  const admins: AdminDirectoryPort = { isAdmin: (teamId, userId) => ws.isAdmin(teamId, userId) };
  return {
    kind: "local",
    local: ws,
    membership: new LocalMembership(deps.store, ws.teamId),
    approvals: new LocalApprovalChannel(ws, deps.log, deps.approvalTimeoutMs),
    consent: new LocalConsent(ws, deps.registry),
    admins,
    notices: new LocalOwnerNotices(ws),
  };
}

/**
 * How an ended connection is told to its owner: not when they replaced or revoked it themselves;
 * `by` is the admin when the revoke came from one (the actor `admin:<id>` in the audit row).
 */
export function endNotice(c: Connection, actor: string | null | undefined): ConnectionEnd | undefined {
  if (c.status === "expired") return { how: "expired" };
  if (c.status !== "revoked" || c.endedReason === "replaced") return undefined;
  if (actor && actor === c.ownerUserId) return undefined;
  const admin = actor?.startsWith("admin:") ? actor.slice("admin:".length) : undefined;
  return admin ? { how: "revoked", by: admin } : { how: "revoked" };
}
