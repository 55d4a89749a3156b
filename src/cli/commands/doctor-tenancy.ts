import type { Config } from "../../config/env.js";
import type { TenantDirectory } from "../../tenancy/tenant-directory.js";
import { unboundTokenFinding } from "../../tenancy/unbound-tokens.js";
import type { Finding } from "./doctor.js";

/**
 * `doctor`'s view of the unbound-host-token rule (src/tenancy/unbound-tokens.ts): with several
 * installations in `tenants`, an unbound SLAUDE_HOST_TOKENS entry is a warning, and an error in
 * production (where `serve` refuses to start). Names counts, never a token.
 */
export async function checkHostTokenTenancy(config: Config, tenants: TenantDirectory): Promise<Finding> {
  const unboundTokens = config.hostTokens.filter((t) => !config.hostTokenTeams.has(t)).length;
  let liveInstallations: number;
  try {
    liveInstallations = await tenants.liveInstallations();
  } catch (err) {
    return { check: "host token tenants", level: "error", message: `the installations could not be counted: ${String(err)}`, fix: "check the database (see the database findings above)" };
  }
  return { check: "host token tenants", ...unboundTokenFinding({ unboundTokens, liveInstallations, production: config.nodeEnv === "production" }) };
}
