import type { SecretBinding } from "../vault/aead.js";
import type { Connection, NewConnection } from "../store/records.js";

/** The AAD binding of a connection row: every field that decides who may use its credential. */
export function bindingOf(c: Connection | Omit<NewConnection, "sealed">): SecretBinding {
  return {
    connectionId: c.id,
    teamId: c.teamId,
    ownerUserId: c.ownerUserId,
    service: c.service,
    scope: c.scope,
    channelId: c.channelId,
    threadTs: c.threadTs,
  };
}
