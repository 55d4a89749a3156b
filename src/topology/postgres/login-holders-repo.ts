import type { LoginHolders } from "../../login/replica/holders.js";
import type { PgDb } from "../../store/postgres/pg-db.js";

/** The advisory lock a running replica holds on its own URL: free means that replica is gone. */
export function replicaLockName(url: string): string {
  return `slaude-connect:replica:${url}`;
}

/**
 * PostgreSQL login holders: `login_sessions.holder_url` (migration 0007), moved only by a
 * conditional update, and each replica's liveness as a session advisory lock on its lock session
 * (PostgreSQL drops it when that connection dies, i.e. when the replica dies).
 */
export class PgLoginHolders implements LoginHolders {
  readonly shared = true;
  constructor(private readonly db: PgDb) {}

  async holderOf(id: string): Promise<string | undefined> {
    const r = (
      await this.db.query<{ holder_url: string | null }>("SELECT holder_url FROM login_sessions WHERE id = $1", [id])
    ).rows[0];
    return r?.holder_url ?? undefined;
  }

  async record(id: string, url: string): Promise<void> {
    await this.db.query("UPDATE login_sessions SET holder_url = $2 WHERE id = $1 AND status = 'opened'", [id, url]);
  }

  async takeOver(id: string, from: string, to: string): Promise<boolean> {
    const res = await this.db.query(
      "UPDATE login_sessions SET holder_url = $3 WHERE id = $1 AND status = 'opened' AND holder_url = $2",
      [id, from, to],
    );
    return res.rowCount === 1;
  }

  hold(url: string, onLost: (err: Error) => void): Promise<{ release(): Promise<void> } | undefined> {
    return this.db.tryHoldLock(replicaLockName(url), onLost);
  }

  alive(url: string): Promise<boolean> {
    return this.db.lockHeld(replicaLockName(url));
  }
}
