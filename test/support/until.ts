// One polling wait for every test: it waits for an observable outcome (a row, a log line, a
// process state), never for a fixed time, and its deadline only bounds a test that would hang.

/** What `get` returns once it holds: any value but the falsy ones. */
export type Held<T> = Exclude<T, undefined | null | false | 0 | "">;

/**
 * Polls `get` (sync or async) every `interval` ms until it returns a truthy value, and returns that
 * value; after `ms` it throws, naming `what` (a text, or a function for state read at that moment).
 */
export async function until<T>(
  get: () => T | Promise<T>,
  ms = 20_000,
  what: string | (() => string) = "condition",
  interval = 20,
): Promise<Held<T>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (v) return v as Held<T>;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${ms} ms waiting for ${typeof what === "string" ? what : what()}`);
    await new Promise((r) => setTimeout(r, interval));
  }
}
