// What the parts of one confined browser (confinement, screencast, input relay) share: whether the
// browser is closing (late events are then ignored, not reported) and where warnings go.

/** The owner's state and logging, as each part of a ConfinedBrowser sees it. */
export interface BrowserHooks {
  /** Whether close() has begun: events racing the shutdown are dropped silently. */
  closing(): boolean;
  warn(msg: string, f?: Record<string, unknown>): void;
  /** Runs a caller's callback; its failure must not break the browser's event handling. */
  safely(fn: () => void): void;
}

/** An error's message for a log line (never its stack, never a caller's object). */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
