import { parseArgs } from "node:util";
import { type CliContext, UsageError } from "../context.js";
import { formatTable, formatTime } from "../format.js";

export const GRANTS_HELP = `slaude-connect grants <list|revoke>

  list   [--team T] [--owner U] [--borrower U] [--all] [--json]
  revoke <grant-id>`;

/** `grants list|revoke`. */
export async function grantsCommand(ctx: CliContext, argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === "list") {
    const { values } = parseArgs({
      args: rest,
      options: {
        team: { type: "string" },
        owner: { type: "string" },
        borrower: { type: "string" },
        all: { type: "boolean" },
        json: { type: "boolean" },
      },
      strict: true,
    });
    const grants = await ctx.store.grants.list({
      ...(values.team ? { teamId: values.team } : {}),
      ...(values.owner ? { ownerUserId: values.owner } : {}),
      ...(values.borrower ? { borrowerUserId: values.borrower } : {}),
      liveOnly: !values.all,
    });
    if (values.json) {
      for (const g of grants) ctx.out(JSON.stringify(g));
      return 0;
    }
    ctx.out(
      formatTable(
        ["ID", "CONNECTION", "SERVICE", "OWNER", "BORROWER", "THREAD", "CREATED", "REVOKED"],
        grants.map((g) => [
          g.id,
          g.connectionId,
          g.service,
          g.ownerUserId,
          g.borrowerUserId,
          `${g.teamId}/${g.channelId}/${g.threadTs}`,
          formatTime(g.createdAt),
          formatTime(g.revokedAt),
        ]),
      ),
    );
    return 0;
  }
  if (sub === "revoke") {
    const { positionals } = parseArgs({ args: rest, options: {}, strict: true, allowPositionals: true });
    const id = positionals[0];
    if (!id || positionals.length > 1) throw new UsageError("usage: slaude-connect grants revoke <grant-id>");
    const r = await ctx.grants().revokeGrant(id, `cli:${ctx.io.env.USER ?? "operator"}`);
    if (r.kind === "not_found" || r.kind === "refused") {
      ctx.err(`no grant ${id}`);
      return 1;
    }
    if (r.kind === "not_live") {
      ctx.err(`grant ${id} is already revoked`);
      return 1;
    }
    ctx.out(`revoked ${id}`);
    return 0;
  }
  throw new UsageError(GRANTS_HELP);
}
