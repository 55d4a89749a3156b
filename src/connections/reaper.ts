import type { Logger } from "../log/logger.js";
import type { Metrics } from "../metrics/metrics.js";

/** A periodic job (TTL reaper, approval expiry) that never overlaps itself and never keeps the process alive. */
export class PeriodicJob {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly name: string,
    private readonly intervalMs: number,
    private readonly run: () => Promise<unknown>,
    private readonly log: Logger,
    private readonly metrics?: Pick<Metrics, "jobRan">,
  ) {}

  /** Runs once now, then every interval. */
  start(): void {
    if (this.timer) return;
    void this.tick();
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
  }

  /** Runs one pass now (skipped if one is already running). */
  async tick(): Promise<void> {
    if (this.running) return;
    const t0 = performance.now();
    let outcome: "ok" | "failed" = "ok";
    this.running = this.run().catch((err: unknown) => {
      outcome = "failed";
      this.log.error(`${this.name} failed`, { error: (err as Error).message });
    });
    try {
      await this.running;
    } finally {
      this.running = undefined;
      this.metrics?.jobRan(this.name, outcome, (performance.now() - t0) / 1000);
    }
  }

  /** Stops the timer and waits for a pass in flight. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
