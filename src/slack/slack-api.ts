import type { WebClient } from "@slack/web-api";

/** A Block Kit block, as far as the core cares: JSON for Slack. */
export type Block = Record<string, unknown>;

/** The Slack Web API methods slaude-connect uses: the port every Slack call goes through. */
export interface SlackApi {
  openDm(userId: string): Promise<string>;
  postMessage(m: { channel: string; text: string; blocks?: Block[]; threadTs?: string }): Promise<{ channel: string; ts: string }>;
  updateMessage(m: { channel: string; ts: string; text: string; blocks?: Block[] }): Promise<void>;
  postEphemeral(m: { channel: string; user: string; text: string; blocks?: Block[]; threadTs?: string }): Promise<void>;
  deleteMessage(channel: string, ts: string): Promise<void>;
  /** Every member of a channel (all pages). */
  channelMembers(channel: string): Promise<string[]>;
  /** Whether Slack says the user is a workspace admin or owner. */
  isWorkspaceAdmin(userId: string): Promise<boolean>;
  publishHome(userId: string, view: { type: "home"; blocks: Block[] }): Promise<void>;
  /** Opens a modal for the user whose click carried `triggerId` (valid about 3 seconds, once). */
  openView(triggerId: string, view: Record<string, unknown>): Promise<void>;
}

/** The production adapter over a WebClient (whose base URL may point at a fake on loopback). */
export class WebClientSlackApi implements SlackApi {
  constructor(private readonly client: WebClient) {}

  async openDm(userId: string): Promise<string> {
    const r = await this.client.conversations.open({ users: userId });
    const id = r.channel?.id;
    if (!id) throw new Error("conversations.open returned no channel");
    return id;
  }
  async postMessage(m: { channel: string; text: string; blocks?: Block[]; threadTs?: string }): Promise<{ channel: string; ts: string }> {
    const r = await this.client.chat.postMessage({ channel: m.channel, text: m.text, ...(m.blocks ? { blocks: m.blocks as never } : {}), ...(m.threadTs ? { thread_ts: m.threadTs } : {}) });
    if (!r.ts || !r.channel) throw new Error("chat.postMessage returned no ts");
    return { channel: r.channel, ts: r.ts };
  }
  async updateMessage(m: { channel: string; ts: string; text: string; blocks?: Block[] }): Promise<void> {
    await this.client.chat.update({ channel: m.channel, ts: m.ts, text: m.text, ...(m.blocks ? { blocks: m.blocks as never } : {}) });
  }
  async postEphemeral(m: { channel: string; user: string; text: string; blocks?: Block[]; threadTs?: string }): Promise<void> {
    await this.client.chat.postEphemeral({ channel: m.channel, user: m.user, text: m.text, ...(m.blocks ? { blocks: m.blocks as never } : {}), ...(m.threadTs ? { thread_ts: m.threadTs } : {}) });
  }
  async deleteMessage(channel: string, ts: string): Promise<void> {
    await this.client.chat.delete({ channel, ts });
  }
  async channelMembers(channel: string): Promise<string[]> {
    const out: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 1000; page++) {
      const r = await this.client.conversations.members({ channel, limit: 1000, ...(cursor ? { cursor } : {}) });
      out.push(...(r.members ?? []));
      cursor = r.response_metadata?.next_cursor || undefined;
      if (!cursor) break;
    }
    return out;
  }
  async isWorkspaceAdmin(userId: string): Promise<boolean> {
    const r = await this.client.users.info({ user: userId });
    return Boolean(r.user?.is_admin || r.user?.is_owner || r.user?.is_primary_owner);
  }
  async publishHome(userId: string, view: { type: "home"; blocks: Block[] }): Promise<void> {
    await this.client.views.publish({ user_id: userId, view: view as never });
  }
  async openView(triggerId: string, view: Record<string, unknown>): Promise<void> {
    await this.client.views.open({ trigger_id: triggerId, view: view as never });
  }
}
