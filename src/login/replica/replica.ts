// This replica's place among the others for logins: its own URL (SLAUDE_REPLICA_URL), recorded as
// the holder of every flow whose link it opens, and its liveness mark (held while it runs), by
// which another replica that cannot reach it tells "stopped" from "unreachable".

import type { Clock, Timer } from "../../clock/clock.js";
import { errorMessage } from "../../domain/errors.js";
import type { Logger } from "../../log/logger.js";
import type { LoginHolders } from "./holders.js";

/** How often a replica that could not take its liveness mark (a predecessor's connection lingering) tries again. */
export const MARK_RETRY_MS = 5_000;

/** Records this replica as a flow's holder; what the login links need of it. */
export interface HolderRecord {
  /** Records this replica as the holder of the session `sessionId` it just opened (a no-op with one process). */
  record(sessionId: string): Promise<void>;
}

/** This replica's URL and liveness mark, over the holders port. */
export class LoginReplica implements HolderRecord {
  private url: string | undefined;
  private mark: { release(): Promise<void> } | undefined;
  private retry: Timer | undefined;
  private closed = false;

  constructor(
    readonly holders: LoginHolders,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** This replica's URL (an origin), once it listens. */
  get self(): string | undefined {
    return this.url;
  }

  /** Whether this replica holds its liveness mark (always true with one process). */
  get marked(): boolean {
    return !this.holders.shared || this.mark !== undefined;
  }

  /** Starts serving as `url`: takes the liveness mark, retrying in the background while another process holds it. */
  async start(url: string): Promise<void> {
    this.url = url;
    if (!this.holders.shared) return;
    if (await this.tryMark()) return;
    this.log.warn(
      "another process holds this replica's URL (SLAUDE_REPLICA_URL must differ per replica, or a stopped predecessor's database connection has not closed yet); retrying",
      { replicaUrl: url },
    );
    this.retryLater();
  }

  private retryLater(): void {
    this.retry ??= this.clock.setInterval(() => void this.tryMark(), MARK_RETRY_MS, { unref: true });
  }

  private async tryMark(): Promise<boolean> {
    if (this.mark || this.closed || !this.url) return this.mark !== undefined;
    let mark: { release(): Promise<void> } | undefined;
    let lostEarly = false;
    const lost = (err: Error): void => {
      if (!mark) {
        lostEarly = true; // lost before hold() returned it
        return;
      }
      if (this.mark !== mark) return;
      this.mark = undefined;
      if (this.closed) return;
      // Until it is back, other replicas see this one as stopped and take its login flows over.
      this.log.warn("replica liveness mark lost; taking it again", { replicaUrl: this.url, error: err.message });
      void this.tryMark().then((ok) => ok || this.retryLater());
    };
    mark = await this.holders.hold(this.url, lost).catch((err: unknown) => {
      this.log.warn("replica liveness mark failed", { error: errorMessage(err) });
      return undefined;
    });
    if (!mark || lostEarly) return false;
    if (this.closed) {
      await mark.release();
      return false;
    }
    this.mark = mark;
    this.retry?.cancel();
    this.retry = undefined;
    return true;
  }

  async record(sessionId: string): Promise<void> {
    if (this.holders.shared && this.url) await this.holders.record(sessionId, this.url);
  }

  /** Gives the mark back (a graceful stop: the flows here have ended). */
  async close(): Promise<void> {
    this.closed = true;
    this.retry?.cancel();
    await this.mark?.release().catch(() => {});
    this.mark = undefined;
  }
}
