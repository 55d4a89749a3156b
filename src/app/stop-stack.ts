// Shutdown as the builders' stops in reverse: each builder of the composition root returns what
// it built and the stop of what it started; the last one started is the first one stopped.

/** What every builder returns beside what it built. */
export interface Stoppable {
  stop(): Promise<void>;
}

/** The stops of the builders run so far, in the order they were built. */
export class StopStack {
  private readonly stops: (() => Promise<void>)[] = [];

  /** Keeps `built`'s stop for shutdown and hands `built` back. */
  add<T extends Stoppable>(built: T): T {
    this.stops.push(() => built.stop());
    return built;
  }

  /** Runs every kept stop once, last built first; the first failure rejects (the rest are not run). */
  async stopAll(): Promise<void> {
    for (let stop = this.stops.pop(); stop; stop = this.stops.pop()) await stop();
  }

  /** After a builder threw: stops what was started before it, each failure logged, none thrown. */
  async unwind(onError: (err: unknown) => void): Promise<void> {
    for (let stop = this.stops.pop(); stop; stop = this.stops.pop()) await stop().catch(onError);
  }
}
