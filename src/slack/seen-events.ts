import { LRUCache } from "lru-cache";

/**
 * Slack event ids already handled, so a retried or replayed delivery is applied once. Bounded: the
 * least recently seen ids are forgotten first (Slack retries within minutes, far inside the window).
 */
export class SeenEvents {
  private readonly ids: LRUCache<string, true>;

  constructor(max = 10_000) {
    this.ids = new LRUCache<string, true>({ max });
  }

  /** True the first time `eventId` is offered, false for every repeat still remembered. */
  firstTime(eventId: string): boolean {
    if (this.ids.has(eventId)) return false;
    this.ids.set(eventId, true);
    return true;
  }

  /** Ids remembered now (at most the bound). */
  get size(): number {
    return this.ids.size;
  }
}
