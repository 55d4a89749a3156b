import type { SecretBinding } from "./aead.js";

/** The fields of a connection row that decide who may use its credential (row or draft alike). */
export interface BoundRow {
  readonly id: string;
  readonly teamId: string;
  readonly ownerUserId: string | null;
  readonly service: string;
  readonly scope: SecretBinding["scope"];
  readonly channelId: string | null;
  readonly threadTs: string | null;
}

/** The AAD binding of a connection row: every field that decides who may use its credential. */
export function bindingOf(c: BoundRow): SecretBinding {
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
