import type pg from "pg";

// Statements sent outside a transaction while the pool is handing over a client share that client
// (issue 25, item 5): a warm call's independent reads, issued together, leave in one write and are
// answered by one server backend, in order, instead of one socket write, one backend wake-up and
// one answer read each. The client is in pipeline mode, so each statement still has its own Sync:
// it commits (or fails) on its own, as it would on a client of its own.

/** At most this many statements share one client; the next one starts another. */
export const SHARED_SEND_MAX = 16;

/** A pooled client as the sharer uses it: handed over by `checkout`, given back by `release`. */
export interface SharedCheckout {
  readonly client: pg.PoolClient;
  readonly release: (err?: Error) => void;
}

interface Waiting {
  readonly config: pg.QueryConfig;
  readonly resolve: (r: pg.QueryResult) => void;
  readonly reject: (err: unknown) => void;
}

/** The socket under a pooled client (node-postgres keeps it on the client's connection). */
function socketOf(client: pg.PoolClient): { cork(): void; uncork(): void } | undefined {
  return (client as unknown as { connection?: { stream?: { cork(): void; uncork(): void } } }).connection?.stream;
}

/** Sends statements on shared clients: those queued while one client is being checked out all go on it. */
export class SharedSend {
  private open: Waiting[] | undefined;

  constructor(private readonly checkout: () => Promise<SharedCheckout>) {}

  /** Sends `config` with the statements queued alongside it; settles with its own result. */
  send<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    return new Promise<pg.QueryResult<R>>((resolve, reject) => {
      let batch = this.open;
      if (!batch || batch.length >= SHARED_SEND_MAX) {
        batch = [];
        this.open = batch;
        const mine = batch;
        this.checkout().then(
          (c) => this.write(mine, c),
          (err: unknown) => {
            if (this.open === mine) this.open = undefined;
            for (const w of mine) w.reject(err);
          },
        );
      }
      batch.push({ config, resolve: resolve as (r: pg.QueryResult) => void, reject });
    });
  }

  /** Writes every waiting statement on `c` at once (corked: one write), then gives the client back. */
  private write(batch: Waiting[], c: SharedCheckout): void {
    if (this.open === batch) this.open = undefined;
    const socket = socketOf(c.client);
    socket?.cork();
    let failed: Error | undefined;
    const sent = batch.map((w) =>
      c.client.query(w.config).then(w.resolve, (err: unknown) => {
        failed ??= err instanceof Error ? err : new Error(String(err));
        w.reject(err);
      }),
    );
    socket?.uncork();
    // As the pool's own query does: a client that saw any error is not handed out again.
    void Promise.all(sent).then(() => c.release(failed));
  }
}
