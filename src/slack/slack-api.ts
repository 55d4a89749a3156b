import type { types } from "@slack/bolt";
import type { WebClient } from "@slack/web-api";
import { z } from "zod";
import { SlackApiError } from "./errors.js";

/** A Block Kit block, typed by Slack's own definitions so a malformed block fails to compile. */
export type Block = types.KnownBlock;
/** The App Home tab's view. */
export type HomeView = types.HomeView;
/** A modal's view. */
export type ModalView = types.ModalView;

/** The Slack Web API methods slaude-connect uses: the port every Slack call goes through. */
export interface SlackApi {
  openDm(userId: string): Promise<string>;
  postMessage(m: {
    channel: string;
    text: string;
    blocks?: Block[];
    threadTs?: string;
  }): Promise<{ channel: string; ts: string }>;
  updateMessage(m: { channel: string; ts: string; text: string; blocks?: Block[] }): Promise<void>;
  postEphemeral(m: { channel: string; user: string; text: string; blocks?: Block[]; threadTs?: string }): Promise<void>;
  deleteMessage(channel: string, ts: string): Promise<void>;
  /** Every member of a channel (all pages); throws when any page fails or there are too many. */
  channelMembers(channel: string): Promise<string[]>;
  /** Whether Slack says the user is a workspace admin or owner. */
  isWorkspaceAdmin(userId: string): Promise<boolean>;
  publishHome(userId: string, view: HomeView): Promise<void>;
  /** Opens a modal for the user whose click carried `triggerId` (valid about 3 seconds, once). */
  openView(triggerId: string, view: ModalView): Promise<void>;
}

/** Pages of conversations.members read at most (1,000 members each): past it the answer is an error, not a guess. */
export const MAX_MEMBER_PAGES = 1_000;
const membersPage = z.object({ members: z.array(z.string().max(64)).max(10_000).optional() });

/** The production adapter over a WebClient (whose base URL may point at a fake on loopback). */
export class WebClientSlackApi implements SlackApi {
  constructor(private readonly client: WebClient) {}

  async openDm(userId: string): Promise<string> {
    const r = await this.client.conversations.open({ users: userId });
    const id = r.channel?.id;
    if (!id) throw new SlackApiError("unexpected_response", "conversations.open returned no channel");
    return id;
  }
  async postMessage(m: {
    channel: string;
    text: string;
    blocks?: Block[];
    threadTs?: string;
  }): Promise<{ channel: string; ts: string }> {
    const r = await this.client.chat.postMessage({
      channel: m.channel,
      text: m.text,
      ...(m.blocks ? { blocks: m.blocks } : {}),
      ...(m.threadTs ? { thread_ts: m.threadTs } : {}),
    });
    if (!r.ts || !r.channel) throw new SlackApiError("unexpected_response", "chat.postMessage returned no ts");
    return { channel: r.channel, ts: r.ts };
  }
  async updateMessage(m: { channel: string; ts: string; text: string; blocks?: Block[] }): Promise<void> {
    await this.client.chat.update({
      channel: m.channel,
      ts: m.ts,
      text: m.text,
      ...(m.blocks ? { blocks: m.blocks } : {}),
    });
  }
  async postEphemeral(m: {
    channel: string;
    user: string;
    text: string;
    blocks?: Block[];
    threadTs?: string;
  }): Promise<void> {
    await this.client.chat.postEphemeral({
      channel: m.channel,
      user: m.user,
      text: m.text,
      ...(m.blocks ? { blocks: m.blocks } : {}),
      ...(m.threadTs ? { thread_ts: m.threadTs } : {}),
    });
  }
  async deleteMessage(channel: string, ts: string): Promise<void> {
    await this.client.chat.delete({ channel, ts });
  }
  async channelMembers(channel: string): Promise<string[]> {
    const out: string[] = [];
    let pages = 0;
    // The WebClient follows response_metadata.next_cursor; we only bound how far.
    for await (const page of this.client.paginate("conversations.members", { channel, limit: 1000 })) {
      if (++pages > MAX_MEMBER_PAGES)
        throw new SlackApiError(
          "too_many_pages",
          `conversations.members: more than ${MAX_MEMBER_PAGES} pages for one channel`,
        );
      out.push(...(membersPage.parse(page).members ?? []));
    }
    return out;
  }
  async isWorkspaceAdmin(userId: string): Promise<boolean> {
    const r = await this.client.users.info({ user: userId });
    return Boolean(r.user?.is_admin || r.user?.is_owner || r.user?.is_primary_owner);
  }
  async publishHome(userId: string, view: HomeView): Promise<void> {
    await this.client.views.publish({ user_id: userId, view });
  }
  async openView(triggerId: string, view: ModalView): Promise<void> {
    await this.client.views.open({ trigger_id: triggerId, view });
  }
}
