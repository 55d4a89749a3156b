import v8 from "node:v8";

// How far the broker's old generation may grow past what is live before V8 collects it. V8 picks
// the multiple itself, from how fast it collects against how fast the program allocates, up to 4×
// on a large machine; about 20 KB of a warm call's short-lived objects (most of it the SDK's parse of
// the inbound request) reach the old generation and die there, so under load the broker's old
// generation sat at 2–3× its 35–45 MB live size (docs/operations.md#memory). A fixed 20% keeps
// it near the live size, for a full collection every few thousand calls. It is a V8 flag that is
// read at each collection, so it is set at run time here, whatever started the process (V8 refuses
// it in NODE_OPTIONS); one given on the command line is left alone.

/** The old generation's growth past its live size before the next full collection, in percent. */
export const HEAP_GROWING_PERCENT = 20;

/** Whether `execArgv` already chooses the growth (`--heap-growing-percent`, in V8's either spelling). */
export function heapGrowthChosen(execArgv: readonly string[]): boolean {
  return execArgv.some((a) => /^--heap[-_]growing[-_]percent(=|$)/.test(a));
}

/** Sets the old generation's growth for a long-running server, unless the command line chose one; true if set. */
export function tuneHeapForServing(execArgv: readonly string[] = process.execArgv): boolean {
  if (heapGrowthChosen(execArgv)) return false;
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
