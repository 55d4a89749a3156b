import { parseArgs } from "node:util";
import { printableName } from "../../config/tool-inspection.js";
import { diffDefinitions, renderDiff } from "../../pinning/diff.js";
import type { DecisionRefusal } from "../../pinning/policy.js";
import { PinService } from "../../pinning/service.js";
import type { ToolPin } from "../../store/records.js";
import { type CliContext, UsageError } from "../context.js";
import { formatTable, formatTime } from "../format.js";

// `registry changes|accept|reject`: an operator's review of tool definitions that changed since
// they were pinned (src/pinning). Definitions are vendor metadata, printed as stored (redacted of
// the fetching connection's credential, cut to a fixed size).

/** The pinning subcommands' usage, part of REGISTRY_HELP. */
export const PINS_HELP = `  changes [--team T] [--service S] [--diff]
              Lists tools whose vendor serves a definition other than the pinned one (quarantined:
              refused), new tools (unreviewed: refused unless the service sets trustNewTools) and
              rejected changes, with the full hash of each waiting definition (WAITING, what
              --hash takes). --diff prints each as a line diff of the accepted definition (-) and
              the changed one (+).
  accept SERVICE TOOL [--team T] [--hash H]
              Pins the waiting definition, ending the quarantine. --hash H (the 64-character
              WAITING hash from changes) accepts only the definition you reviewed; --team is
              needed when several teams wait on it.
  reject SERVICE TOOL [--team T] [--hash H]
              Refuses the change: the tool stays refused while its vendor serves it.`;

const pins = (ctx: CliContext) => new PinService({ store: ctx.store, clock: ctx.clock, log: ctx.log });
const short = (h: string | null) => (h === null ? "-" : h.slice(0, 16));
// The waiting definition's hash is printed whole: it is what `accept --hash` binds the decision to.
const full = (h: string | null) => h ?? "-";
/** What `--hash` takes: the whole SHA-256 of a definition, as `changes` prints it. */
const HASH = /^[0-9a-f]{64}$/;

/** `registry changes`. */
export async function changes(ctx: CliContext, argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { team: { type: "string" }, service: { type: "string" }, diff: { type: "boolean" } },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length) throw new UsageError(PINS_HELP);
  const rows = await pins(ctx).changes({
    ...(values.team ? { teamId: values.team } : {}),
    ...(values.service ? { service: values.service } : {}),
  });
  ctx.out(
    formatTable(
      ["TEAM", "SERVICE", "TOOL", "STATUS", "CHANGED", "PINNED", "WAITING"],
      rows.map((p) => [
        p.teamId,
        p.service,
        printableName(p.tool),
        p.status,
        formatTime(p.changedAt),
        short(p.pinnedHash),
        full(p.pendingHash),
      ]),
    ),
  );
  if (values.diff) {
    for (const p of rows) {
      ctx.out("");
      ctx.out(
        `--- ${p.service}/${printableName(p.tool)} in ${p.teamId}: ${p.pinnedHash === null ? "never accepted" : `accepted ${short(p.pinnedHash)}`}`,
      );
      ctx.out(`+++ ${p.status === "rejected" ? "rejected" : "waiting"} ${full(p.pendingHash)}`);
      ctx.out(renderDiff(diffDefinitions(p.pinnedDefinition, p.pendingDefinition)));
    }
  }
  return 0;
}

const REFUSED: Record<DecisionRefusal, string> = {
  not_found: "no such tool has been seen for that service in that team",
  nothing_pending: "nothing is waiting for a decision on that tool",
  hash_mismatch: "the waiting definition changed since you reviewed it (run `registry changes --diff` again)",
};

/** `registry accept|reject SERVICE TOOL`: audited with the operator as the actor, refusals too. */
export async function decideCommand(ctx: CliContext, kind: "accept" | "reject", argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { team: { type: "string" }, hash: { type: "string" } },
    strict: true,
    allowPositionals: true,
  });
  const [service, tool] = positionals;
  if (!service || !tool || positionals.length > 2) throw new UsageError(PINS_HELP);
  // A shortened hash would never match: say so, rather than "changed since you reviewed it".
  if (values.hash !== undefined && !HASH.test(values.hash))
    throw new UsageError(
      `--hash takes the whole 64-character hash that \`registry changes\` prints under WAITING (got ${values.hash.length} characters)`,
    );
  const svc = pins(ctx);
  let teamId = values.team;
  if (teamId === undefined) {
    const waiting: ToolPin[] = await svc.changes({ service, tool });
    const teams = [...new Set(waiting.map((p) => p.teamId))];
    if (teams.length === 0) {
      ctx.err(`${service}/${printableName(tool)}: ${REFUSED.nothing_pending}`);
      return 1;
    }
    if (teams.length > 1)
      throw new UsageError(
        `${service}/${printableName(tool)} waits in ${teams.length} teams (${teams.join(", ")}): name one with --team`,
      );
    teamId = teams[0]!;
  }
  const r = await svc.decide(
    { teamId, service },
    { kind, tool, by: `cli:${ctx.io.env.USER ?? "operator"}`, ...(values.hash ? { expectedHash: values.hash } : {}) },
  );
  if (r.kind === "refused") {
    ctx.err(`${service}/${printableName(tool)} in ${teamId}: ${REFUSED[r.reason]}`);
    return 1;
  }
  ctx.out(
    `${service}/${printableName(tool)} in ${teamId}: ${kind === "accept" ? `accepted; pinned ${full(r.pin.pinnedHash)}` : "rejected; calls stay refused while the vendor serves that definition"}`,
  );
  return 0;
}
