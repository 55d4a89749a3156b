import type { ChannelRoster } from "../membership/channel-membership.js";
import type { SlackApi } from "./slack-api.js";

/** Channel rosters from Slack's conversations.members (all pages). Errors propagate: the caller fails closed. */
export class SlackMembership implements ChannelRoster {
  constructor(private readonly api: SlackApi) {}
  async members(_teamId: string, channelId: string): Promise<readonly string[]> {
    return this.api.channelMembers(channelId);
  }
}
