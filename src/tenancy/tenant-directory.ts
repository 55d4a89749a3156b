// The tenant facts the host-token guard asks for, behind a port: which Enterprise Grid org a team
// belongs to, and how many installations the deployment serves. Production implements it over the
// installations store (src/installations); the static directory below is the single-installation
// default (the local workspace, one SLACK_BOT_TOKEN, tests).

/** Tenant facts for the host-token guard. Adapters should answer from a cache: the guard asks on every host request that needs them. */
export interface TenantDirectory {
  /** The enterprise id (`E…`) of the org team `teamId` belongs to; null when it belongs to none or is unknown. */
  enterpriseOf(teamId: string): Promise<string | null>;
  /** How many installations are live (not uninstalled): an unbound host token may act only when at most one is. */
  liveInstallations(): Promise<number>;
  /** Whether an active installation serves `teamId`; absent: every team is served (one fixed workspace). */
  serves?(teamId: string): Promise<boolean>;
}

/** A fixed directory: `installations` live installations, and the teams of each org in `enterprises` (team id → enterprise id). */
export class StaticTenantDirectory implements TenantDirectory {
  constructor(
    private readonly installations: number,
    private readonly enterprises: ReadonlyMap<string, string> = new Map(),
  ) {}

  async enterpriseOf(teamId: string): Promise<string | null> {
    return this.enterprises.get(teamId) ?? null;
  }

  async liveInstallations(): Promise<number> {
    return this.installations;
  }
}

/** The default of a deployment serving one workspace (the local T_LOCAL, a single SLACK_BOT_TOKEN): one installation, no org. */
export function singleInstallation(): TenantDirectory {
  return new StaticTenantDirectory(1);
}
