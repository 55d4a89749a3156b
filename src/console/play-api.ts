import type http from "node:http";
import { z } from "zod";
import { slackTextLine } from "../cards/slack-text.js";
import { sendJson } from "../server/http-server.js";
import { LocalWorkspaceError } from "../workspace/local/errors.js";
import { BROKER_TOOLS, type HostAgent, type HostOutcome, type HostProgress } from "./host-agent.js";
import { jsonBody, knownUser, query, refuse } from "./http.js";
import type { ConsoleWorkspace } from "./ports.js";
import type { SseHub } from "./sse.js";

// Workspace, threads, inbox and the tool playground. Every body and query is parsed strictly;
// a user named in a request must be a user of the workspace.

/** An id of the workspace (user, channel, approval, item). */
const id = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/);
const threadTs = z.string().regex(/^\d{1,12}\.\d{1,8}$/);

const membershipBody = z.object({ channelId: id, userId: id, member: z.boolean() }).strict();
const newThreadBody = z.object({ channelId: id, userId: id }).strict();
const threadsQuery = z.object({ channel: id }).strict();
const userQuery = z.object({ user: id }).strict();
const hostBody = z
  .object({
    channelId: id,
    threadTs,
    userId: id,
    tool: z.enum(BROKER_TOOLS),
    arguments: z.record(z.string(), z.unknown()),
    /** Chosen by the page so progress events can be matched to the run before it answers. */
    runId: z.string().regex(/^run_[A-Za-z0-9_-]{6,40}$/),
  })
  .strict();
const notesQuery = z.object({ channel: id, ts: threadTs }).strict();
const continueBody = z.object({ itemId: id, asUserId: id }).strict();
const decideBody = z
  .object({ approvalId: id, decision: z.enum(["allowed_thread", "allowed_once", "denied"]), asUserId: id })
  .strict();

/** What the play API needs. */
export interface PlayApiDeps {
  readonly workspace: ConsoleWorkspace;
  readonly host: HostAgent;
  readonly events: SseHub;
}

/** Handlers of the workspace, threads, playground and inbox endpoints. */
export class PlayApi {
  constructor(private readonly d: PlayApiDeps) {}

  private async knownChannel(res: http.ServerResponse, channelId: string): Promise<boolean> {
    if ((await this.d.workspace.channels()).some((c) => c.id === channelId)) return true;
    refuse(res, 404, "unknown_channel", `There is no channel ${channelId} in this workspace.`);
    return false;
  }

  /** GET /console/api/workspace: users and channels with their members. */
  async workspace(res: http.ServerResponse): Promise<void> {
    const [users, channels] = await Promise.all([this.d.workspace.users(), this.d.workspace.channels()]);
    sendJson(res, 200, { teamId: this.d.workspace.teamId, users, channels });
  }

  /** POST /console/api/membership: adds or removes a member (effective on the next call). */
  async membership(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const b = await jsonBody(req, res, membershipBody);
    if (!b || !(await knownUser(this.d.workspace, res, b.userId)) || !(await this.knownChannel(res, b.channelId)))
      return;
    await this.d.workspace.setMember(b.channelId, b.userId, b.member);
    sendJson(res, 200, { ok: true });
  }

  /** GET /console/api/threads?channel=C: the channel's threads. */
  async threads(res: http.ServerResponse, url: URL): Promise<void> {
    const q = query(res, url, threadsQuery);
    if (!q || !(await this.knownChannel(res, q.channel))) return;
    sendJson(res, 200, { threads: await this.d.workspace.threads(q.channel) });
  }

  /** POST /console/api/threads: a user starts a thread in a channel. */
  async startThread(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const b = await jsonBody(req, res, newThreadBody);
    if (!b || !(await knownUser(this.d.workspace, res, b.userId)) || !(await this.knownChannel(res, b.channelId)))
      return;
    try {
      sendJson(res, 200, { thread: await this.d.workspace.startThread(b.channelId, b.userId) });
    } catch (err) {
      // The workspace refuses with a code (not a member, too many threads): said as it is.
      if (!(err instanceof LocalWorkspaceError)) throw err;
      refuse(res, 409, err.code, err.message);
    }
  }

  /** GET /console/api/notes?channel=C&ts=T: what was posted in the thread (e.g. "asked Alice"). */
  async notes(res: http.ServerResponse, url: URL): Promise<void> {
    const q = query(res, url, notesQuery);
    if (!q) return;
    sendJson(res, 200, {
      notes: await this.d.workspace.notes({ teamId: this.d.workspace.teamId, channelId: q.channel, threadTs: q.ts }),
    });
  }

  /** POST /console/api/host: one broker tool call as `userId` in the thread, through /v1/turns and /mcp. */
  async host(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const b = await jsonBody(req, res, hostBody);
    if (!b || !(await knownUser(this.d.workspace, res, b.userId))) return;
    const thread = { teamId: this.d.workspace.teamId, channelId: b.channelId, threadTs: b.threadTs };
    const progress = (p: HostProgress) =>
      this.d.events.broadcast({
        type: "progress",
        data: { runId: b.runId, ...p, ...(p.message ? { messageLine: slackTextLine(p.message) } : {}) },
      });
    const outcome = await this.d.host.call(thread, b.userId, b.tool, b.arguments, progress);
    sendJson(res, outcome.kind === "host_error" && outcome.code === "busy" ? 429 : 200, {
      runId: b.runId,
      ...outcome,
      ...readable(outcome),
    });
  }

  /** GET /console/api/inbox?user=U: the user's cards, newest first. */
  async inbox(res: http.ServerResponse, url: URL): Promise<void> {
    const q = query(res, url, userQuery);
    if (!q || !(await knownUser(this.d.workspace, res, q.user))) return;
    sendJson(res, 200, { items: await this.d.workspace.inbox(q.user) });
  }

  /** POST /console/api/decide: `asUserId` clicks a decision on an approval card; only the owner's click counts. */
  async decide(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const b = await jsonBody(req, res, decideBody);
    if (!b || !(await knownUser(this.d.workspace, res, b.asUserId))) return;
    const result = await this.d.workspace.decide(b.approvalId, b.decision, b.asUserId);
    sendJson(res, 200, { result, message: CLICK_MESSAGES[result] });
  }

  /** POST /console/api/continue: a consent card's Continue; only the card's own user gets the login link. */
  async continueConsent(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const b = await jsonBody(req, res, continueBody);
    if (!b || !(await knownUser(this.d.workspace, res, b.asUserId))) return;
    const r = await this.d.workspace.continueConsent(b.itemId, b.asUserId);
    if ("url" in r) return sendJson(res, 200, { url: r.url });
    refuse(res, r.refused === "unknown_item" ? 404 : 403, r.refused, CONTINUE_MESSAGES[r.refused]);
  }
}

/**
 * The broker's Slack text of an answer as card lines (mentions as people, no Slack markup), for
 * the page to render: the result text and the structured answer's message.
 */
function readable(o: HostOutcome): Record<string, unknown> {
  if (o.kind !== "result") return {};
  const message = o.structured?.message;
  return {
    textLine: slackTextLine(o.text),
    ...(typeof message === "string" ? { messageLine: slackTextLine(message) } : {}),
  };
}

const CONTINUE_MESSAGES = {
  not_yours: "Only the person this card was sent to can continue.",
  unknown_item: "This card no longer exists.",
  unavailable: "A login link could not be made right now; try again.",
} as const;

/** What the clicker is told, one sentence per click result. */
const CLICK_MESSAGES = {
  applied: "Done.",
  not_owner: "Only the owner of this account can answer this request.",
  expired: "This request has expired.",
  already_decided: "This request was already answered.",
  unknown: "This request is not valid.",
  not_offered: "This request can only be denied: its arguments could not all be shown exactly.",
} as const;
