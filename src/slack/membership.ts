import type { ChannelRoster } from "../membership/channel-membership.js";
import type { SlackApis } from "./tenant-api.js";

/**
 * Channel rosters from Slack's conversations.members (all pages), asked with the token of the team the
 * channel belongs to. Errors propagate (a team with no active installation too): the caller fails closed.
 */
export class SlackMembership implements ChannelRoster {
  constructor(private readonly apis: SlackApis) {}
  async members(teamId: string, channelId: string): Promise<readonly string[]> {
    return (await this.apis.forTeam(teamId)).channelMembers(channelId);
  }
}
