import { parseArgs } from "node:util";
import { z } from "zod";
import type { Connection } from "../../store/records.js";
import { type CredentialInput, credentialSchema } from "../../vault/credential.js";
import { type CliContext, UsageError } from "../context.js";
import { formatTable, formatTime } from "../format.js";
import { readSecretFromStdin } from "../stdin.js";
import { CONNECTIONS_LOGIN_HELP, loginCommand } from "./connections-login.js";

export const CONNECTIONS_HELP = `slaude-connect connections <list|add|revoke|login>

  list   [--team T] [--owner U] [--service S] [--all] [--json]
         Live connections (add --all for revoked and expired ones too). Times are ISO UTC;
         --json prints one object per line, with the same times and no ciphertext.
  add    --team T --service S [--scope shared|user|thread] [--owner U] [--channel C --thread TS]
         [--label L] [--field NAME] [--format token|json] [--ttl 8h]
         --scope defaults to shared (the team's fallback identity, no owner); user and thread
         need --owner, thread also --channel and --thread. --ttl defaults to the service's TTL.
         Stores a credential read from standard input (never from arguments). --format token
         (default) reads one value into field NAME (default "token"); --format json reads a
         credential document ({"kind":"fields","fields":{...}} or {"kind":"oauth",...}).
  revoke <connection-id> [--reason TEXT]
         Revokes a connection: its ciphertext is wiped and its grants revoked.
${CONNECTIONS_LOGIN_HELP}`;

function row(c: Connection): string[] {
  // A thread is named as the grants list names it (channel/ts), in its own column, not as a scope.
  const thread = c.channelId && c.threadTs ? `${c.channelId}/${c.threadTs}` : "-";
  return [
    c.id,
    c.teamId,
    c.ownerUserId ?? "(shared)",
    c.service,
    c.scope,
    thread,
    c.status,
    formatTime(c.expiresAt),
    c.label ?? "",
  ];
}

/** One connection as a JSON line: no ciphertext, and the same ISO times as the table. */
function jsonRow(c: Connection): Record<string, unknown> {
  const { sealed, createdAt, updatedAt, expiresAt, endedAt, ...rest } = c;
  return {
    ...rest,
    createdAt: formatTime(createdAt),
    updatedAt: formatTime(updatedAt),
    expiresAt: formatTime(expiresAt),
    endedAt: endedAt === null ? null : formatTime(endedAt),
    keyId: sealed?.keyId ?? null,
    hasSecret: sealed !== null,
  };
}

/** `connections list|add|revoke`. */
export async function connectionsCommand(ctx: CliContext, argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case "list":
      return list(ctx, rest);
    case "add":
      return add(ctx, rest);
    case "revoke":
      return revoke(ctx, rest);
    case "login":
      return loginCommand(ctx, rest);
    default:
      throw new UsageError(CONNECTIONS_HELP);
  }
}

async function list(ctx: CliContext, argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      team: { type: "string" },
      owner: { type: "string" },
      service: { type: "string" },
      all: { type: "boolean" },
      json: { type: "boolean" },
    },
    strict: true,
  });
  const rows = await ctx.store.connections.list({
    ...(values.team ? { teamId: values.team } : {}),
    ...(values.owner ? { ownerUserId: values.owner } : {}),
    ...(values.service ? { service: values.service } : {}),
    ...(values.all ? {} : { statuses: ["active", "needs_login"] as const }),
  });
  if (values.json) {
    for (const c of rows) ctx.out(JSON.stringify(jsonRow(c)));
    return 0;
  }
  ctx.out(
    formatTable(["ID", "TEAM", "OWNER", "SERVICE", "SCOPE", "THREAD", "STATUS", "EXPIRES", "LABEL"], rows.map(row)),
  );
  return 0;
}

const addOptions = z
  .object({
    team: z.string().min(1, "--team is required"),
    service: z.string().min(1, "--service is required"),
    scope: z.enum(["shared", "user", "thread"]).default("shared"),
    owner: z.string().min(1).optional(),
    channel: z.string().min(1).optional(),
    thread: z.string().min(1).optional(),
    label: z.string().optional(),
    field: z
      .string()
      .regex(/^[a-z][a-z0-9_]*$/, "--field is a lowercase name like token")
      .default("token"),
    format: z.enum(["token", "json"]).default("token"),
    ttl: z.string().optional(),
  })
  .strict();

async function add(ctx: CliContext, argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      team: { type: "string" },
      service: { type: "string" },
      scope: { type: "string" },
      owner: { type: "string" },
      channel: { type: "string" },
      thread: { type: "string" },
      label: { type: "string" },
      field: { type: "string" },
      format: { type: "string" },
      ttl: { type: "string" },
    },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length)
    throw new UsageError(
      "connections add takes no positional arguments: the secret is read from standard input, never from the command line",
    );
  const opts = addOptions.safeParse(values);
  if (!opts.success)
    throw new UsageError(
      opts.error.issues.map((i) => `${i.path.join(".") ? `--${i.path.join(".")}: ` : ""}${i.message}`).join("\n"),
    );
  const o = opts.data;
  if (o.scope !== "shared" && !o.owner) throw new UsageError(`--owner is required for scope ${o.scope}`);
  if (o.scope === "shared" && o.owner) throw new UsageError("a shared connection has no owner: drop --owner");
  // Validate against the registry before reading the secret, so a typo costs nothing.
  const service = ctx.registry.registry.get(o.service);
  if (!service) {
    const known = ctx.registry.registry.list().map((s) => s.name);
    ctx.err(
      `unknown service "${o.service}"${known.length ? ` (known: ${known.join(", ")})` : " (the service registry is empty)"}`,
    );
    return 1;
  }
  let ttlMs: number | undefined;
  if (o.ttl) {
    const { parseDurationMs } = await import("../../config/duration.js");
    ttlMs = parseDurationMs(o.ttl);
    if (ttlMs === undefined) throw new UsageError(`--ttl: expected a duration like 30m, 8h, 7d`);
  }
  if (ctx.io.stdin.isTTY) ctx.err("Paste the secret, then press Enter and Ctrl-D:");
  const secret = await readSecretFromStdin(ctx.io.stdin);
  if (!secret) {
    ctx.err("no secret on standard input; nothing stored");
    return 1;
  }
  let credential: CredentialInput;
  if (o.format === "json") {
    let doc: unknown;
    try {
      doc = JSON.parse(secret);
    } catch {
      ctx.err("standard input is not valid JSON; nothing stored");
      return 1;
    }
    const parsed = credentialSchema.safeParse(doc);
    if (!parsed.success) {
      // Only paths, never values: the document is a secret.
      ctx.err(
        `credential document is invalid at ${parsed.error.issues.map((i) => i.path.join(".") || "(root)").join(", ")}; nothing stored`,
      );
      return 1;
    }
    credential = parsed.data;
  } else {
    credential = { kind: "fields", fields: { [o.field]: secret } };
  }
  const conn = await ctx.lifecycle().create({
    teamId: o.team,
    ownerUserId: o.scope === "shared" ? null : o.owner!,
    service: o.service,
    scope: o.scope,
    channelId: o.channel ?? null,
    threadTs: o.thread ?? null,
    credential,
    label: o.label ?? null,
    createdBy: `cli:${ctx.io.env.USER ?? "operator"}`,
    ...(ttlMs !== undefined ? { ttlMs } : {}),
  });
  ctx.out(`stored ${conn.id} (${conn.service}, ${conn.scope}, expires ${formatTime(conn.expiresAt)})`);
  return 0;
}

async function revoke(ctx: CliContext, argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { reason: { type: "string" } },
    strict: true,
    allowPositionals: true,
  });
  const id = positionals[0];
  if (!id || positionals.length > 1)
    throw new UsageError("usage: slaude-connect connections revoke <connection-id> [--reason TEXT]");
  const before = await ctx.store.connections.get(id);
  if (!before) {
    ctx.err(`no connection ${id}`);
    return 1;
  }
  const ended = await ctx
    .lifecycle()
    .revoke(id, `cli:${ctx.io.env.USER ?? "operator"}`, values.reason ?? "revoked by operator");
  if (!ended) {
    ctx.err(`connection ${id} is already ${before.status}`);
    return 1;
  }
  ctx.out(`revoked ${id}`);
  return 0;
}
