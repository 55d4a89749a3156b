// Spare login browsers: Chromium started ahead of time, so a login skips the launch (about half a
// second, more under load). A spare is a bare process: no browser context, no page, nothing a
// login could leave behind. It is handed to exactly one login, which confines its own fresh
// context before any page loads and kills the whole process when it ends. The replacement is
// started (fill) once that login's page is loading, so two Chromium starts never compete for the
// CPU at the moment a user waits. Nothing is ever given back: a used browser is never reused.
import type { Clock } from "../../clock/clock.js";
import type { ChromiumProcess } from "./chromium-process.js";
import { spareChromiumArgs } from "./confinement.js";
import { errorMessage } from "./hooks.js";
import type { HostAllowlist } from "./host-allowlist.js";
import { stopChromium } from "./teardown.js";

/** Most spares kept at once, whatever config asks: each holds a whole Chromium (~100+ MB). */
export const MAX_SPARES = 4;

/** What the pool needs to start spares. */
export interface SpareSettings {
  /** Spares kept ready; 0 turns the pool off. At most MAX_SPARES. */
  readonly size: number;
  readonly chromiumPath: string;
  /**
   * The host names a spare may resolve (HostAllowlist.resolvableHosts of every login the registry
   * can start), read when each spare starts: a login whose hosts are not all among them gets a cold browser.
   */
  readonly resolvableHosts: () => Iterable<string>;
  /** A BrowserHomes directory, so the start-up sweep finds spares a killed broker left behind. */
  readonly homesDir?: string | undefined;
  readonly searchPath?: string | undefined;
  readonly clock: Clock;
  readonly log: { warn(msg: string, f?: Record<string, unknown>): void };
}

/** One spare, started or starting; `resolvable` is fixed on its command line. */
interface Spare {
  readonly resolvable: ReadonlySet<string>;
  readonly ready: Promise<ChromiumProcess | undefined>;
}

/** A small pool of pre-started Chromium processes, each handed out once. */
export class SpareBrowsers {
  private readonly spares: Spare[] = [];
  private closed = false;

  constructor(private readonly s: SpareSettings) {
    if (!Number.isInteger(s.size) || s.size < 0 || s.size > MAX_SPARES)
      throw new RangeError(`spare browsers must be 0..${MAX_SPARES}`);
  }

  /** Spares held (started or starting). */
  get size(): number {
    return this.spares.length;
  }

  /** Starts spares up to the configured size, in the background. Call after the start-up sweep. */
  fill(): void {
    while (!this.closed && this.spares.length < this.s.size) {
      const resolvable = new Set(this.s.resolvableHosts());
      // No login the registry can start is known ahead (none lists its hosts): a spare would fit none.
      if (resolvable.size === 0) return;
      this.spares.push(this.startOne(resolvable));
    }
  }

  /**
   * Hands the oldest spare whose resolvable hosts cover `allow` to the caller, who owns it from
   * now on and calls fill() once its page is loading; undefined when none fits or the one taken failed to start.
   */
  async take(allow: HostAllowlist): Promise<ChromiumProcess | undefined> {
    if (this.closed) return undefined;
    const needed = allow.resolvableHosts();
    const i = this.spares.findIndex((sp) => needed.every((h) => sp.resolvable.has(h)));
    if (i < 0) return undefined;
    const [spare] = this.spares.splice(i, 1);
    const p = await spare?.ready;
    if (!p) return undefined;
    if (!p.browser.isConnected()) {
      // It died while waiting (killed, crashed): clean up what is left and let the caller start one.
      await stopChromium(p, this.s.clock, this.s.log.warn);
      return undefined;
    }
    return p;
  }

  /** Resolves once every spare held now has started (or failed to); the number that started. */
  async ready(): Promise<number> {
    return (await Promise.all(this.spares.map((sp) => sp.ready))).filter(Boolean).length;
  }

  /** Stops refilling and kills every spare not handed out, those still starting included (shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    const left = this.spares.splice(0);
    await Promise.all(
      left.map(async (sp) => {
        const p = await sp.ready;
        if (p) await stopChromium(p, this.s.clock, this.s.log.warn);
      }),
    );
  }

  private startOne(resolvable: ReadonlySet<string>): Spare {
    // playwright-core is loaded on first use, as for a cold browser (a broker without spares never loads it here).
    const ready = import("./chromium-process.js")
      .then(({ launchChromium }) =>
        launchChromium({
          chromiumPath: this.s.chromiumPath,
          args: spareChromiumArgs(resolvable),
          homeParent: this.s.homesDir,
          searchPath: this.s.searchPath,
        }),
      )
      .then(
        (p) => p,
        (err: unknown) => {
          this.s.log.warn("spare login browser did not start", { error: errorMessage(err) });
          return undefined;
        },
      );
    return { resolvable, ready };
  }
}
