/**
 * What a stored tool result's ciphertext is bound to: the result, and every field that decides who
 * may read it (its team, its owner, its thread). A row edited to name another owner or thread, or
 * its ciphertext copied onto another row, no longer decrypts.
 */
export interface ResultBinding {
  readonly resultId: string;
  readonly teamId: string;
  readonly ownerUserId: string;
  readonly channelId: string;
  readonly threadTs: string;
}

const RESULT_AAD_VERSION = "slaude-connect/result/v1";

/** The AAD of a stored result: a canonical encoding of its binding plus the key id (never the credential's shape). */
export function resultAssociatedData(b: ResultBinding, keyId: string): Buffer {
  return Buffer.from(
    JSON.stringify([RESULT_AAD_VERSION, b.resultId, b.teamId, b.ownerUserId, b.channelId, b.threadTs, keyId]),
  );
}
