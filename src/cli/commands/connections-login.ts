import { parseArgs } from "node:util";
import { z } from "zod";
import { LoginError } from "../../login/errors.js";
import { LoginService } from "../../login/login-service.js";
import { type CliContext, UsageError } from "../context.js";
import { formatTime } from "../format.js";
import { loginUserRefusal } from "./login-user-check.js";

export const CONNECTIONS_LOGIN_HELP = `  login  --team T --user U --service S [--thread CHANNEL/TS]
         Prints a one-time login link for user U (a bearer secret: give it to U only). With
         --thread the connection is for that thread, else for U everywhere (scope user). The
         link opens the broker's live-view login page at SLAUDE_PUBLIC_URL, so the broker must
         be running there, with the same master key; it expires after SLAUDE_LOGIN_LINK_TTL_SECONDS.
         U must exist: a person of the local workspace (team T_LOCAL), or of the Slack team
         (users.info with its installation's token); anyone else is refused and no link minted.`;

const id = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/);
const loginOptions = z
  .object({
    team: id,
    user: id,
    service: z.string().min(1),
    thread: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}\/\d{1,12}\.\d{1,8}$/, "--thread is CHANNEL/TS, e.g. C_GENERAL/1700000000.000100")
      .optional(),
  })
  .strict();

/** `connections login`: mints a one-time login link for a user, as the consent card's Continue does. */
export async function loginCommand(ctx: CliContext, argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      team: { type: "string" },
      user: { type: "string" },
      service: { type: "string" },
      thread: { type: "string" },
    },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length)
    throw new UsageError(`connections login takes no positional arguments\n\n${CONNECTIONS_LOGIN_HELP}`);
  const parsed = loginOptions.safeParse(values);
  if (!parsed.success) {
    const missing = ["team", "user", "service"].filter((k) => values[k as keyof typeof values] === undefined);
    throw new UsageError(
      `${missing.length ? `missing ${missing.map((k) => `--${k}`).join(", ")}` : parsed.error.issues.map((i) => `--${i.path.join(".")}: ${i.message}`).join("\n")}\n\n${CONNECTIONS_LOGIN_HELP}`,
    );
  }
  const o = parsed.data;
  const registry = ctx.registry.registry;
  if (!registry.get(o.service)) {
    const known = registry.list().map((s) => s.name);
    ctx.err(
      `unknown service "${o.service}"${known.length ? ` (known: ${known.join(", ")})` : " (the service registry is empty)"}`,
    );
    return 1;
  }
  // A link for nobody is a bearer secret nobody should hold (src/cli/commands/login-user-check.ts).
  const refusal = await loginUserRefusal(ctx, o.team, o.user);
  if (refusal) {
    ctx.err(`${refusal}; no link minted`);
    return 1;
  }
  const [channelId, threadTs] = o.thread ? (o.thread.split("/") as [string, string]) : [null, null];
  const config = ctx.config;
  const logins = new LoginService({
    store: ctx.store,
    keys: ctx.keys.ring,
    registry,
    lifecycle: ctx.lifecycle(),
    clock: ctx.clock,
    log: ctx.log,
    // Minting needs no browser: the broker that serves the link starts one when it is opened.
    browsers: async () => {
      throw new Error("the CLI starts no login browser");
    },
    settings: {
      publicUrl: config.publicUrl,
      linkTtlMs: config.login.linkTtlMs,
      flowTimeoutMs: config.login.flowTimeoutMs,
      maxConcurrent: config.login.maxConcurrent,
      detachGraceMs: config.login.detachGraceMs,
    },
  });
  try {
    const link = await logins.mint({ teamId: o.team, userId: o.user, service: o.service, channelId, threadTs });
    ctx.err(
      `one-time login link for ${o.user} (${o.service}, ${o.thread ? `thread ${o.thread}` : "scope user"}), valid until ${formatTime(link.expiresAt)}; anyone holding it can connect as ${o.user}:`,
    );
    ctx.out(link.url);
    return 0;
  } catch (err) {
    if (err instanceof LoginError) {
      ctx.err(`error: ${err.code}: ${err.message}`);
      return 1;
    }
    throw err;
  }
}
