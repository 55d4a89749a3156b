import { parseArgs } from "node:util";
import { WebClient } from "@slack/web-api";
import { vaultSealer } from "../../installations/installation-ports.js";
import { Installations } from "../../installations/installations.js";
import { TenantLifecycle } from "../../installations/tenant-lifecycle.js";
import { slackErrorCode } from "../../installations/token-refresh.js";
import { processRefreshLock } from "../../login/oauth/refresh-lock.js";
import { SlackTokenRotation } from "../../slack/installation-adapters.js";
import { missingScopes } from "../../slack/scopes.js";
import { slackClientOptions } from "../../slack/slack-app.js";
import type { InstallationMeta } from "../../store/installation-records.js";
import { type CliContext, UsageError } from "../context.js";
import { formatTable, formatTime } from "../format.js";

export const INSTALLATIONS_HELP = `slaude-connect installations <list|check|disable|enable>

  list     [--all] [--json]   the Slack workspaces and Enterprise Grid orgs that installed the app
                              (--all includes uninstalled ones); no token is ever printed
  check    [ID]               auth.test and the granted scopes of each active installation (or one)
  disable  ID                 calls and events of that tenant are refused until it is enabled
  enable   ID                 serve a disabled installation again (its stored token must still work)`;

const MAX_LIST = 10_000;

function tenant(i: InstallationMeta): string {
  return i.isEnterpriseInstall
    ? `${i.enterpriseId ?? "?"} (org-wide)`
    : `${i.teamId ?? "?"}${i.enterpriseId ? ` in ${i.enterpriseId}` : ""}`;
}

/** The installations of the CLI's store, able to open (and refresh) their bot tokens. */
export function installationsOf(ctx: CliContext): Installations {
  const dist = ctx.config.slack.distribution;
  const options = slackClientOptions(ctx.config.slack, ctx.log);
  return new Installations({
    repo: ctx.store.installations,
    sealer: vaultSealer(ctx.vault),
    clock: ctx.clock,
    log: ctx.log,
    audit: ctx.store.audit,
    // One CLI run at a time per operator; a replica refreshing at the same moment re-reads the row after its lock.
    lock: processRefreshLock,
    ...(dist ? { rotation: new SlackTokenRotation(dist, options) } : {}),
  });
}

/** `installations list|check|disable|enable`. */
export async function installationsCommand(ctx: CliContext, argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  const actor = `cli:${ctx.io.env.USER ?? "operator"}`;
  if (sub === "list") {
    const { values } = parseArgs({
      args: rest,
      options: { all: { type: "boolean" }, json: { type: "boolean" } },
      strict: true,
    });
    const rows = (await ctx.store.installations.list(MAX_LIST)).filter((i) => values.all || i.status !== "uninstalled");
    if (values.json) {
      for (const i of rows) ctx.out(JSON.stringify(i));
      return 0;
    }
    ctx.out(
      formatTable(
        ["ID", "TENANT", "NAME", "STATUS", "SCOPES", "ROTATION", "INSTALLED", "BY"],
        rows.map((i) => [
          i.id,
          tenant(i),
          i.teamName ?? i.enterpriseName ?? "",
          i.status + (i.statusReason ? ` (${i.statusReason})` : ""),
          String(i.scopes.length),
          i.tokenExpiresAt ? `expires ${formatTime(i.tokenExpiresAt)}` : "off",
          formatTime(i.installedAt),
          i.installedBy ?? "config",
        ]),
      ),
    );
    if (rows.length === 0)
      ctx.out(
        "no installations: install the app from /slack/install, or set SLACK_BOT_TOKEN (see docs/slack-setup.md)",
      );
    return 0;
  }
  if (sub === "check") {
    const { positionals } = parseArgs({ args: rest, options: {}, strict: true, allowPositionals: true });
    if (positionals.length > 1) throw new UsageError("usage: slaude-connect installations check [ID]");
    const installations = installationsOf(ctx);
    const metas = (await ctx.store.installations.list(MAX_LIST)).filter((i) =>
      positionals[0] ? i.id === positionals[0] : i.status === "active",
    );
    if (positionals[0] && metas.length === 0) {
      ctx.err(`no installation ${positionals[0]}`);
      return 1;
    }
    let failed = 0;
    for (const meta of metas) {
      const inst = await ctx.store.installations.get(meta.id);
      if (inst?.status !== "active") {
        ctx.out(`${meta.id} ${tenant(meta)}: ${meta.status}${meta.statusReason ? ` (${meta.statusReason})` : ""}`);
        failed++;
        continue;
      }
      try {
        const { botToken } = await installations.token(inst);
        const r = await new WebClient(botToken, {
          ...slackClientOptions(ctx.config.slack, ctx.log),
          retryConfig: { retries: 0 },
        }).auth.test();
        const missing = missingScopes(r.response_metadata?.scopes ?? inst.scopes);
        ctx.out(
          `${meta.id} ${tenant(meta)}: ok (auth.test)${missing.length ? `; missing scopes: ${missing.map((m) => m.scope).join(", ")} (reinstall the app to grant them)` : "; scopes ok"}`,
        );
        if (missing.length) failed++;
      } catch (err) {
        ctx.out(`${meta.id} ${tenant(meta)}: FAILED (${slackErrorCode(err)})`);
        failed++;
      }
    }
    return failed ? 1 : 0;
  }
  if (sub === "disable" || sub === "enable") {
    const { positionals } = parseArgs({ args: rest, options: {}, strict: true, allowPositionals: true });
    const id = positionals[0];
    if (!id || positionals.length > 1) throw new UsageError(`usage: slaude-connect installations ${sub} ID`);
    const tenants = new TenantLifecycle({
      repo: ctx.store.installations,
      installations: installationsOf(ctx),
      store: ctx.store,
      lifecycle: ctx.lifecycle(),
      clock: ctx.clock,
      log: ctx.log,
    });
    const ok = sub === "disable" ? await tenants.disable(id, "operator", actor) : await tenants.enable(id, actor);
    if (!ok) {
      ctx.err(`no ${sub === "disable" ? "active" : "disabled"} installation ${id}`);
      return 1;
    }
    ctx.out(`${sub}d ${id}`);
    return 0;
  }
  throw new UsageError(INSTALLATIONS_HELP);
}
