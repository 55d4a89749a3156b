/** A thread: where a conversation (and so a turn, grant or thread-scoped connection) lives. */
export interface ThreadRef {
  readonly teamId: string;
  readonly channelId: string;
  readonly threadTs: string;
}
