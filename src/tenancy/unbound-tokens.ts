// The start-up and `doctor` rule for unbound host tokens: a token bound to no team may act in any
// thread, which is safe only while the deployment serves a single installation. With several, the
// operator is told (doctor), and production refuses to start until every token is bound.

/** What the rule judges: how many host tokens are unbound, how many installations are live, whether this is production. */
export interface UnboundTokenFacts {
  readonly unboundTokens: number;
  readonly liveInstallations: number;
  readonly production: boolean;
}

/** The rule's finding, shaped like a doctor finding: `error` stops a production start. */
export interface UnboundTokenFinding {
  readonly level: "ok" | "warn" | "error";
  readonly message: string;
  readonly fix?: string;
}

const FIX =
  "bind every SLAUDE_HOST_TOKENS entry to its tenant as <team_id>:<token> (T…) or <enterprise_id>:<token> (E…); see docs/host-integration.md";

/** Judges the unbound host tokens against the installations; names counts only, never a token. Pure. */
export function unboundTokenFinding(f: UnboundTokenFacts): UnboundTokenFinding {
  if (f.unboundTokens === 0) return { level: "ok", message: "every host token is bound to a team or an org" };
  if (f.liveInstallations <= 1)
    return {
      level: "ok",
      message: `${f.unboundTokens} unbound host token(s), allowed while one installation is served`,
    };
  const message = `${f.unboundTokens} host token(s) in SLAUDE_HOST_TOKENS are bound to no team while ${f.liveInstallations} installations are served: an unbound token is refused in every thread${f.production ? ", and production does not start" : ""}`;
  return { level: f.production ? "error" : "warn", message, fix: FIX };
}
