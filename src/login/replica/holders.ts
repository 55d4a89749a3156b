// The port behind "which replica holds this login flow" (issue 14): with several replicas on one
// PostgreSQL, the replica that opened a link records itself in the database, and the others forward
// the viewer's requests to it. With SQLite there is one process: every flow is local.

/** Where running login flows live, and whether the replica holding one is still running. */
export interface LoginHolders {
  /** False with one process (SQLite): nothing is ever recorded or forwarded. */
  readonly shared: boolean;
  /** The address recorded as holding session `id` (unvalidated: parse it before connecting). */
  holderOf(id: string): Promise<string | undefined>;
  /** Records `url` as the holder of the opened session `id` (its link was just opened there). */
  record(id: string, url: string): Promise<void>;
  /** Moves open session `id` from `from` to `to` if `from` still holds it; false when another replica moved it first. */
  takeOver(id: string, from: string, to: string): Promise<boolean>;
  /**
   * Holds the liveness mark of the replica at `url` for as long as it runs; undefined when another
   * process holds it. `onLost` runs if the mark is lost without `release()` (its database connection died).
   */
  hold(url: string, onLost: (err: Error) => void): Promise<{ release(): Promise<void> } | undefined>;
  /** Whether the replica at `url` is running: its liveness mark is held. */
  alive(url: string): Promise<boolean>;
}

/** One process (the SQLite store): every flow is local, so there is nothing to record or to ask. */
export const singleProcessHolders: LoginHolders = {
  shared: false,
  holderOf: async () => undefined,
  record: async () => {},
  takeOver: async () => true,
  hold: async () => ({ release: async () => {} }),
  alive: async () => true,
};
