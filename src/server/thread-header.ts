import { z } from "zod";
import type { ThreadRef } from "../domain/thread.js";

/** A Slack team or channel id as the host endpoints accept it. */
export const idPart = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/);

/** Parses `X-Slaude-Thread: <team_id>/<channel_id>/<thread_ts>`. */
export function parseThreadHeader(v: string | string[] | undefined): ThreadRef | undefined {
  if (typeof v !== "string") return undefined;
  const parts = v.split("/");
  if (parts.length !== 3) return undefined;
  const [teamId, channelId, threadTs] = parts;
  if (
    !idPart.safeParse(teamId).success ||
    !idPart.safeParse(channelId).success ||
    !/^\d{1,12}\.\d{1,8}$/.test(threadTs ?? "")
  )
    return undefined;
  return { teamId: teamId!, channelId: channelId!, threadTs: threadTs! };
}
