/**
 * One socket's pending inputs, run one at a time in arrival order. At most `max` wait: a viewer
 * sending faster than the browser takes input is refused (push returns false) rather than queued
 * without bound, and the caller closes its socket.
 */
export class InputQueue<T> {
  private readonly waiting: T[] = [];
  private running = false;
  private cleared = false;

  constructor(
    private readonly max: number,
    private readonly run: (item: T) => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Inputs waiting to run (the one running excluded). */
  get size(): number {
    return this.waiting.length;
  }

  /** Queues `item`; false, with nothing queued, when `max` inputs already wait or the queue was cleared. */
  push(item: T): boolean {
    if (this.cleared || this.waiting.length >= this.max) return false;
    this.waiting.push(item);
    if (!this.running) void this.drain();
    return true;
  }

  /** Drops every waiting input and refuses later ones (the socket closed). */
  clear(): void {
    this.cleared = true;
    this.waiting.length = 0;
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      for (let item = this.waiting.shift(); item !== undefined; item = this.waiting.shift()) {
        try {
          await this.run(item);
        } catch (err) {
          this.onError(err);
        }
      }
    } finally {
      this.running = false;
    }
  }
}
