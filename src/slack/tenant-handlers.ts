import type { App } from "@slack/bolt";
import { z } from "zod";
import type { TenantLifecycle } from "../installations/tenant-lifecycle.js";
import type { Logger } from "../log/logger.js";

// Slack telling the app a tenant is gone: app_uninstalled wipes the tenant, tokens_revoked (for the
// bot) disables its installation until a reinstall. Bolt runs these without `authorize` (the tokens
// are already dead) but only after verifying the request's signature, so only Slack can send them.

const slackId = z.string().regex(/^[A-Z0-9]{2,32}$/);
const envelope = z.object({
  team_id: slackId.nullish(),
  enterprise_id: slackId.nullish(),
  is_enterprise_install: z.boolean().optional(),
});
const tokensRevoked = z.object({ tokens: z.object({ bot: z.array(slackId).max(100).optional() }) });

/** Registers app_uninstalled and tokens_revoked. */
export function registerTenantHandlers(app: App, d: { readonly tenants: TenantLifecycle; readonly log: Logger }): void {
  app.event("app_uninstalled", async ({ body }) => {
    const e = envelope.safeParse(body);
    if (!e.success) return void d.log.warn("ignored a malformed app_uninstalled event");
    const report = await d.tenants.uninstall(
      {
        teamId: e.data.team_id ?? null,
        enterpriseId: e.data.enterprise_id ?? null,
        isEnterpriseInstall: e.data.is_enterprise_install === true,
      },
      "slack:app_uninstalled",
    );
    if (!report) d.log.info("app_uninstalled for a tenant with no live installation", { team: e.data.team_id ?? null });
  });
  app.event("tokens_revoked", async ({ body, event }) => {
    const e = envelope.safeParse(body);
    const t = tokensRevoked.safeParse(event);
    if (!e.success || !t.success) return void d.log.warn("ignored a malformed tokens_revoked event");
    const bots = t.data.tokens.bot ?? [];
    // Only the bot's token matters: user tokens are never stored.
    if (bots.length === 0) return;
    await d.tenants.tokensRevoked(
      {
        teamId: e.data.team_id ?? null,
        enterpriseId: e.data.enterprise_id ?? null,
        isEnterpriseInstall: e.data.is_enterprise_install === true,
      },
      bots,
      "slack:tokens_revoked",
    );
  });
}
