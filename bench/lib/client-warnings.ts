// The MCP SDK's HTTP client hands one long-lived AbortSignal to every fetch of a session, and
// undici releases its per-request listener only on GC: past 1,500 calls Node warns once per call.
// Those warnings are the bench's own clients (the load generator), not the server under test.

/** Counts the clients' abort-listener warnings instead of printing them; other warnings still go to stderr. */
export function countClientAbortWarnings(): () => number {
  let count = 0;
  process.removeAllListeners("warning");
  process.on("warning", (w) => {
    if (w.name === "MaxListenersExceededWarning" && w.message.includes("abort listeners added to [AbortSignal]"))
      count++;
    else process.stderr.write(`${w.name}: ${w.message}\n`);
  });
  return () => count;
}
