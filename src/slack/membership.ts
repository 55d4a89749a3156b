import type { MembershipSource } from "../membership/membership.js";
import type { SlackApi } from "./slack-api.js";

/** Channel membership from Slack's conversations.members (all pages). Errors propagate: the caller fails closed. */
export class SlackMembership implements MembershipSource {
  constructor(private readonly api: SlackApi) {}
  async isMember(_teamId: string, channelId: string, userId: string): Promise<boolean> {
    const members = await this.api.channelMembers(channelId);
    return members.includes(userId);
  }
}
