import { parseArgs } from "node:util";
import { z } from "zod";
import { ApprovalService } from "../../approvals/approval-service.js";
import type { ApprovalDecision } from "../../approvals/card.js";
import { noApprovalChannel } from "../../approvals/channel.js";
import type { Approval } from "../../store/records.js";
import { type CliContext, UsageError } from "../context.js";
import { formatTable, formatTime } from "../format.js";

export const APPROVALS_HELP = `slaude-connect approvals <list|decide>

  list   [--owner U] [--team T] [--all] [--limit N] [--json]
         Approvals waiting for their owner (--all: decided and expired ones too), newest first.
         OFFERS is what the owner may answer: a write is never allowed for the whole thread.
  decide <approval-id> allow-thread|once|deny --as U
         Answers an approval as user U, exactly as their click on the card would: only the
         owner's answer counts (not_owner otherwise), it is audited, and the broker process
         whose call waits on it runs or refuses the call within a second or so. The CLI does
         not show the call's arguments: the card in Slack or the console does.`;

const WORDS: Record<string, ApprovalDecision> = {
  "allow-thread": "allowed_thread",
  once: "allowed_once",
  deny: "denied",
};
const WORD_OF: Record<ApprovalDecision, string> = {
  allowed_thread: "allow-thread",
  allowed_once: "once",
  denied: "deny",
};

const listOptions = z
  .object({
    owner: z.string().min(1).optional(),
    team: z.string().min(1).optional(),
    all: z.boolean().optional(),
    limit: z.coerce.number().int().min(1, "--limit: at least 1").max(10_000, "--limit: at most 10000").default(100),
    json: z.boolean().optional(),
  })
  .strict();

const decideArgs = z
  .object({
    id: z.string().regex(/^appr_[A-Za-z0-9_-]{1,64}$/, "<approval-id> looks like appr_…"),
    decision: z.enum(["allow-thread", "once", "deny"], { error: "the decision is one of allow-thread, once, deny" }),
    as: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "--as U: the user answering (a user id)"),
  })
  .strict();

/** `approvals list|decide`. */
export async function approvalsCommand(ctx: CliContext, argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case "list":
      return list(ctx, rest);
    case "decide":
      return decide(ctx, rest);
    default:
      throw new UsageError(APPROVALS_HELP);
  }
}

function usage(error: z.ZodError): UsageError {
  return new UsageError(`${error.issues.map((i) => i.message).join("\n")}\n\n${APPROVALS_HELP}`);
}

/** The answers an approval's owner may give, as the card would offer them (a write never grants the thread). */
function offers(ctx: CliContext, a: Approval): ApprovalDecision[] {
  const service = ctx.registry.registry.get(a.service);
  // An unknown service or tool is judged as the fail-closed class: a write.
  const write = service ? service.classOf(a.tool).write : true;
  return write ? ["allowed_once", "denied"] : ["allowed_thread", "allowed_once", "denied"];
}

async function list(ctx: CliContext, argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      owner: { type: "string" },
      team: { type: "string" },
      all: { type: "boolean" },
      limit: { type: "string" },
      json: { type: "boolean" },
    },
    strict: true,
  });
  const parsed = listOptions.safeParse(values);
  if (!parsed.success) throw usage(parsed.error);
  const o = parsed.data;
  const rows = await ctx.store.approvals.list({
    ...(o.owner ? { ownerUserId: o.owner } : {}),
    ...(o.team ? { teamId: o.team } : {}),
    ...(o.all ? {} : { pendingAt: ctx.clock.now() }),
    limit: o.limit,
  });
  if (o.json) {
    // No nonce: it is what a click must present, and the CLI never needs it printed.
    for (const a of rows) {
      const { nonce: _nonce, cardChannel: _c, cardTs: _t, ...rest } = a;
      ctx.out(
        JSON.stringify({
          ...rest,
          createdAt: formatTime(a.createdAt),
          expiresAt: formatTime(a.expiresAt),
          decidedAt: a.decidedAt === null ? null : formatTime(a.decidedAt),
          offers: offers(ctx, a).map((d) => WORD_OF[d]),
        }),
      );
    }
    return 0;
  }
  ctx.out(
    formatTable(
      ["ID", "TEAM", "THREAD", "OWNER", "BORROWER", "SERVICE", "TOOL", "STATUS", "EXPIRES", "OFFERS"],
      rows.map((a) => [
        a.id,
        a.teamId,
        `${a.channelId}/${a.threadTs}`,
        a.ownerUserId,
        a.borrowerUserId,
        a.service,
        a.tool,
        a.status,
        formatTime(a.expiresAt),
        offers(ctx, a)
          .map((d) => WORD_OF[d])
          .join("|"),
      ]),
    ),
  );
  return 0;
}

const REFUSALS: Record<Exclude<Awaited<ReturnType<ApprovalService["decide"]>>, "applied">, string> = {
  not_owner: "only the approval's owner can answer it",
  expired: "the approval has expired (the call gave up waiting)",
  already_decided: "the approval was already answered",
  unknown: "no such approval",
  not_offered: "the card does not offer that answer",
};

async function decide(ctx: CliContext, argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { as: { type: "string" } },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length !== 2)
    throw new UsageError(
      `usage: slaude-connect approvals decide <approval-id> allow-thread|once|deny --as U\n\n${APPROVALS_HELP}`,
    );
  const parsed = decideArgs.safeParse({ id: positionals[0], decision: positionals[1], as: values.as });
  if (!parsed.success) throw usage(parsed.error);
  const { id, as } = parsed.data;
  const decision = WORDS[parsed.data.decision]!;
  const a = await ctx.store.approvals.get(id);
  const service = new ApprovalService({
    store: ctx.store,
    channel: noApprovalChannel,
    clock: ctx.clock,
    log: ctx.log,
    timeoutMs: ctx.config.approvalTimeoutMs,
    signals: ctx.signals,
  });
  let result: Awaited<ReturnType<ApprovalService["decide"]>>;
  if (
    a &&
    decision !== "denied" &&
    !offers(ctx, a).includes(decision) &&
    as === a.ownerUserId &&
    a.status === "pending"
  ) {
    // The card would not show this button: refused and audited here, as a click on it would be.
    const now = ctx.clock.now();
    await ctx.store.audit.append([
      {
        at: now,
        event: "approval_rejected_click",
        teamId: a.teamId,
        channelId: a.channelId,
        threadTs: a.threadTs,
        callerUserId: a.borrowerUserId,
        ownerUserId: a.ownerUserId,
        connectionId: a.connectionId,
        service: a.service,
        tool: a.tool,
        argsHash: a.argsHash,
        decision: "not_offered",
        approverUserId: as,
      },
    ]);
    result = "not_offered";
  } else {
    // The nonce is read from the store: the CLI user holds the database, as the card's owner holds the card.
    result = await service.decide(id, a?.nonce ?? "", as, decision);
  }
  if (result === "applied") {
    ctx.out(`${id}: ${WORD_OF[decision]} (answered as ${as})`);
    return 0;
  }
  ctx.err(`error: ${result}: ${REFUSALS[result]}`);
  return 1;
}
