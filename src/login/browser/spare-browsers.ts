// Spare login browsers: Chromium started ahead of time, so a login skips the launch (about half a
// second, more under load). A spare holds nothing a login could leave behind: a bare process, or
// one with a fresh context and blank page pre-made for the login it expects (premade-page.ts).
// It is handed to exactly one login, which confines its context before any page loads and kills
// the whole process when it ends. The replacement is started (fill) once the person pauses, or
// the login ends (deferred-refill.ts), so a Chromium start never competes for the CPU while a
// user waits for a frame; a login that comes first starts it at once. Nothing is ever given
// back: a used browser is never reused.
import type { Clock } from "../../clock/clock.js";
import { traceLogin } from "../trace.js";
import type { ChromiumProcess } from "./chromium-process.js";
import { spareChromiumArgs } from "./confinement.js";
import { DeferredRefill } from "./deferred-refill.js";
import { errorMessage } from "./hooks.js";
import type { HostAllowlist } from "./host-allowlist.js";
import { type PremadePage, premakePage } from "./premade-page.js";
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
  /**
   * The allowed host patterns of the login a spare will most likely serve, read when each spare
   * starts: the spare pre-makes its context and page for them (premade-page.ts). Unset or
   * undefined: a bare spare, whose login makes its own.
   */
  readonly premadeFor?: () => readonly string[] | undefined;
  /** A BrowserHomes directory, so the start-up sweep finds spares a killed broker left behind. */
  readonly homesDir?: string | undefined;
  readonly searchPath?: string | undefined;
  readonly clock: Clock;
  readonly log: { warn(msg: string, f?: Record<string, unknown>): void };
}

/** A started spare: its Chromium, and the page it pre-made, if any. */
export interface SpareProcess extends ChromiumProcess {
  readonly premade?: PremadePage;
}

/** One spare, started or starting; `resolvable` is fixed on its command line. */
interface Spare {
  readonly resolvable: ReadonlySet<string>;
  readonly ready: Promise<SpareProcess | undefined>;
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
      traceLogin("refill_started");
      this.spares.push(this.startOne(resolvable));
    }
  }

  /** A refill that waits for the person of the login that just took a spare (see deferred-refill.ts), on the pool's clock. */
  deferredFill(): DeferredRefill {
    return new DeferredRefill(() => this.fill(), this.s.clock);
  }

  /**
   * Hands the oldest spare whose resolvable hosts cover `allow` to the caller, who owns it from
   * now on and calls fill() later (see deferred-refill.ts); when none is held because such a fill
   * is still pending, it starts one now and waits for it. Undefined when none fits or the one taken failed to start.
   */
  async take(allow: HostAllowlist): Promise<SpareProcess | undefined> {
    if (this.closed) return undefined;
    const needed = allow.resolvableHosts();
    const fits = (sp: Spare) => needed.every((h) => sp.resolvable.has(h));
    // A login before the last one's deferred refill: start that spare now and wait for it here.
    if (!this.spares.some(fits)) this.fill();
    const i = this.spares.findIndex(fits);
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
        (p) => this.premake(p),
        (err: unknown) => {
          this.s.log.warn("spare login browser did not start", { error: errorMessage(err) });
          return undefined;
        },
      );
    return { resolvable, ready };
  }

  /** `p` with a page pre-made for premadeFor's login; a bare `p` when there is none or it fails. */
  private async premake(p: ChromiumProcess): Promise<SpareProcess> {
    const patterns = this.s.premadeFor?.();
    if (!patterns?.length) return p;
    try {
      return { ...p, premade: await premakePage(p.browser, patterns) };
    } catch (err) {
      this.s.log.warn("spare login browser could not pre-make its page", { error: errorMessage(err) });
      return p;
    }
  }
}
