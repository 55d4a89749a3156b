import type http from "node:http";
import { z } from "zod";
import type { AuditEventKind, AuditRecord } from "../audit/event.js";
import type { Clock } from "../clock/clock.js";
import type { ConnectionLifecycle } from "../connections/lifecycle.js";
import { sendJson } from "../server/http-server.js";
import type { Connection, Grant } from "../store/records.js";
import type { Store } from "../store/store.js";
import { jsonBody, knownUser, query, refuse } from "./http.js";
import type { ConsoleAdmins, ConsoleWorkspace } from "./ports.js";

// The Connections panel (what /connections and the App Home show in Slack: mine, grants I gave
// and got, and for an admin the team's connections) and the audit tail. Connections go to the page
// as plain facts: the sealed credential never leaves the store.

const id = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/);
const userQuery = z.object({ user: id }).strict();
const revokeBody = z.object({ kind: z.enum(["connection", "grant", "admin"]), id, asUserId: id }).strict();
const AUDIT_EVENTS = [
  "call_started",
  "call",
  "call_denied",
  "approval_requested",
  "approval_decided",
  "approval_rejected_click",
  "grant_created",
  "grant_revoked",
  "connection_created",
  "connection_replaced",
  "connection_revoked",
  "connection_expired",
  "connection_needs_login",
  "connection_refreshed",
  "login_started",
  "login_completed",
  "login_refused",
  "keys_rotated",
  "admin_action",
  "tool_pin",
] as const satisfies readonly AuditEventKind[];
const runsQuery = z.object({ channel: id, ts: z.string().regex(/^\d{1,12}\.\d{1,8}$/) }).strict();
/** Audit rows read per event kind to find one thread's runs (newest first). */
const RUNS_SCAN = 500;
const auditQuery = z
  .object({
    event: z.enum(AUDIT_EVENTS).optional(),
    user: id.optional(),
    service: id.optional(),
    limit: z.coerce.number().int().min(1).max(500).optional(),
  })
  .strict();

/** A connection as the page sees it: identifiers and dates, never the credential. */
export function connectionView(c: Connection): Record<string, unknown> {
  return {
    id: c.id,
    service: c.service,
    owner: c.ownerUserId,
    scope: c.scope,
    channelId: c.channelId,
    threadTs: c.threadTs,
    status: c.status,
    label: c.label,
    createdAt: c.createdAt,
    expiresAt: c.expiresAt,
  };
}

/** A grant as the page sees it. */
export function grantView(g: Grant): Record<string, unknown> {
  return {
    id: g.id,
    connectionId: g.connectionId,
    service: g.service,
    owner: g.ownerUserId,
    borrower: g.borrowerUserId,
    channelId: g.channelId,
    threadTs: g.threadTs,
    createdAt: g.createdAt,
  };
}

/** An audit row as the page sees it (audit rows hold identifiers, decisions and sizes only). */
export function auditView(r: AuditRecord): Record<string, unknown> {
  return { ...r };
}

/** What the connections API needs. */
export interface ConnectionsApiDeps {
  readonly workspace: ConsoleWorkspace;
  readonly admins: ConsoleAdmins;
  readonly store: Store;
  readonly lifecycle: ConnectionLifecycle;
  readonly clock: Clock;
}

/** Handlers of the connections, revoke and audit endpoints. */
export class ConnectionsApi {
  constructor(private readonly d: ConnectionsApiDeps) {}

  /** GET /console/api/connections?user=U: that user's connections and grants; the team's for an admin. */
  async list(res: http.ServerResponse, url: URL): Promise<void> {
    const q = query(res, url, userQuery);
    if (!q || !(await knownUser(this.d.workspace, res, q.user))) return;
    const teamId = this.d.workspace.teamId;
    const live = ["active", "needs_login"] as const;
    const [mine, given, received, admin] = await Promise.all([
      this.d.store.connections.list({ teamId, ownerUserId: q.user, statuses: live }),
      this.d.store.grants.list({ teamId, ownerUserId: q.user, liveOnly: true }),
      this.d.store.grants.list({ teamId, borrowerUserId: q.user, liveOnly: true }),
      this.d.admins.isAdmin(teamId, q.user),
    ]);
    const all = admin ? await this.d.store.connections.list({ teamId, statuses: live }) : undefined;
    sendJson(res, 200, {
      mine: mine.map(connectionView),
      grantsGiven: given.map(grantView),
      grantsReceived: received.map(grantView),
      admin: all ? { all: all.map(connectionView) } : null,
    });
  }

  /** POST /console/api/revoke: the owner revokes a connection, either side a grant, an admin any connection. */
  async revoke(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const b = await jsonBody(req, res, revokeBody);
    if (!b || !(await knownUser(this.d.workspace, res, b.asUserId))) return;
    const teamId = this.d.workspace.teamId;
    const user = b.asUserId;
    if (b.kind === "grant") {
      const g = await this.d.store.grants.get(b.id);
      if (!g || g.teamId !== teamId || (g.ownerUserId !== user && g.borrowerUserId !== user))
        return refuse(res, 403, "not_yours", "That is not a grant you gave or got.");
      const at = this.d.clock.now();
      await this.d.store.grants.revoke(g.id, user, at, [
        {
          at,
          event: "grant_revoked",
          teamId: g.teamId,
          channelId: g.channelId,
          threadTs: g.threadTs,
          ownerUserId: g.ownerUserId,
          callerUserId: g.borrowerUserId,
          connectionId: g.connectionId,
          service: g.service,
          actor: user,
        },
      ]);
      return sendJson(res, 200, { ok: true, message: "Grant revoked. It takes effect on the next call." });
    }
    const conn = await this.d.store.connections.get(b.id);
    if (b.kind === "connection") {
      if (!conn || conn.teamId !== teamId || conn.ownerUserId !== user)
        return refuse(res, 403, "not_yours", "That is not one of your connections.");
      await this.d.lifecycle.revoke(conn.id, user, "revoked by owner");
      return sendJson(res, 200, {
        ok: true,
        message: `Revoked your ${conn.service} connection. Its credential is wiped and every grant on it revoked.`,
      });
    }
    if (!(await this.d.admins.isAdmin(teamId, user))) {
      await this.d.store.audit.append([
        {
          at: this.d.clock.now(),
          event: "admin_action",
          teamId,
          decision: "refused_not_admin",
          actor: user,
          connectionId: b.id,
        },
      ]);
      return refuse(res, 403, "not_admin", "Only slaude-connect admins can do that.");
    }
    if (!conn || conn.teamId !== teamId) return refuse(res, 404, "unknown_connection", "No such connection.");
    const ended = await this.d.lifecycle.revoke(conn.id, `admin:${user}`, "revoked by admin");
    await this.d.store.audit.append([
      {
        at: this.d.clock.now(),
        event: "admin_action",
        teamId,
        ownerUserId: conn.ownerUserId,
        connectionId: conn.id,
        service: conn.service,
        decision: "revoke",
        actor: user,
      },
    ]);
    const what = await this.named(conn);
    sendJson(res, 200, {
      ok: Boolean(ended),
      message: ended
        ? `Revoked ${what}. Its credential is wiped and every grant on it revoked.`
        : `${what} was not active.`,
    });
  }

  /** A connection in words: "Alice's demo connection for the thread in #general" (names, not ids). */
  private async named(c: Connection): Promise<string> {
    const [users, channels] = await Promise.all([this.d.workspace.users(), this.d.workspace.channels()]);
    const owner = c.ownerUserId
      ? `${users.find((u) => u.id === c.ownerUserId)?.name ?? c.ownerUserId}'s`
      : "the shared";
    const where =
      c.scope === "thread"
        ? ` for the thread in #${channels.find((x) => x.id === c.channelId)?.name ?? c.channelId}`
        : c.scope === "user"
          ? " (everywhere)"
          : "";
    return `${owner} ${c.service} connection${where}`;
  }

  /** GET /console/api/runs?channel=C&ts=T: the thread's finished and refused calls, newest first (from the audit). */
  async runs(res: http.ServerResponse, url: URL): Promise<void> {
    const q = query(res, url, runsQuery);
    if (!q) return;
    const teamId = this.d.workspace.teamId;
    const [done, denied] = await Promise.all(
      (["call", "call_denied"] as const).map((event) =>
        this.d.store.audit.query({ teamId, event, limit: RUNS_SCAN, take: "latest" }),
      ),
    );
    const rows = [...done!, ...denied!]
      .filter((r) => r.channelId === q.channel && r.threadTs === q.ts)
      .sort((a, b) => b.seq - a.seq);
    sendJson(res, 200, { rows: rows.slice(0, 50).map(auditView) });
  }

  /** GET /console/api/audit: the latest audit rows, optionally filtered by event, user or service. */
  async audit(res: http.ServerResponse, url: URL): Promise<void> {
    const q = query(res, url, auditQuery);
    if (!q) return;
    const rows = await this.d.store.audit.query({
      teamId: this.d.workspace.teamId,
      ...(q.event ? { event: q.event } : {}),
      ...(q.user ? { userId: q.user } : {}),
      ...(q.service ? { service: q.service } : {}),
      limit: q.limit ?? 100,
      take: "latest",
    });
    sendJson(res, 200, { rows: rows.map(auditView) });
  }
}
