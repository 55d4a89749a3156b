// The one table of what the Slack app needs: every Web API method the code calls and every event
// it subscribes to, with the bot scopes each needs. test/slack/manifest-scopes.test.ts holds the
// manifests in slack/ to it (nothing missing, nothing unused); `doctor` compares it with the scopes
// Slack reports for the configured bot token.

/** Why a scope is needed, for messages that tell an operator what will break without it. */
export interface ScopeUse {
  /** Every one of these bot scopes is needed (each covers another kind of channel). */
  readonly scopes: readonly string[];
  readonly why: string;
}

/** Web API methods called through WebClient (src/slack/slack-api.ts), and Bolt's own start-up call. */
export const SLACK_METHOD_SCOPES = {
  "auth.test": {
    scopes: [],
    why: "SLACK_BOT_TOKEN is read as the one installation; doctor and installations check test each token",
  },
  // The install flow (src/slack/install-flow.ts): a refused tenant's fresh token is given back.
  "auth.revoke": { scopes: [], why: "an install refused by SLAUDE_SLACK_ALLOWED_TEAMS gives its token back" },
  "auth.teams.list": { scopes: [], why: "the workspaces an org-wide (Enterprise Grid) install serves" },
  // Token rotation: a single-use refresh token for a new 12-hour bot token.
  "oauth.v2.access": { scopes: [], why: "rotating bot tokens are refreshed before they expire" },
  "chat.postMessage": { scopes: ["chat:write"], why: "approval and consent cards, thread notes, admin-revoke notices" },
  "chat.update": { scopes: ["chat:write"], why: "an approval card shows its outcome" },
  "chat.postEphemeral": { scopes: ["chat:write"], why: "the warning after a message that carried a secret" },
  // A bot token can only delete the bot's own messages; the warning says so when it cannot.
  "chat.delete": { scopes: ["chat:write"], why: "removing a message that carried a secret" },
  "conversations.open": { scopes: ["im:write"], why: "DMs to an owner or a connecting user" },
  // Threads are served in public and private channels; DMs and group DMs are not (no im:read, mpim:read).
  "conversations.members": {
    scopes: ["channels:read", "groups:read"],
    why: "channel membership, checked on every call",
  },
  "users.info": { scopes: ["users:read"], why: "workspace admins and owners are slaude-connect admins" },
  "views.publish": { scopes: [], why: "the App Home tab" },
  // A modal needs no scope of its own, only the trigger_id of the owner's click.
  "views.open": { scopes: [], why: "the approval card's View all arguments modal" },
} as const satisfies Record<string, ScopeUse>;

/** Bot events the manifests subscribe to (src/slack/handlers.ts). */
export const SLACK_EVENT_SCOPES = {
  app_home_opened: { scopes: [], why: "the App Home tab" },
  // Sent to every app with no subscription needed in the UI; listed so the manifests and the code agree.
  app_uninstalled: { scopes: [], why: "an uninstall wipes that tenant (connections revoked, results deleted)" },
  tokens_revoked: { scopes: [], why: "a revoked bot token disables its installation until a reinstall" },
  // Without these the broker never sees human replies in served threads (turns) nor pasted secrets.
  "message.channels": {
    scopes: ["channels:history"],
    why: "replies in served threads of public channels are turns; pasted secrets are caught",
  },
  "message.groups": {
    scopes: ["groups:history"],
    why: "replies in served threads of private channels are turns; pasted secrets are caught",
  },
  member_joined_channel: {
    scopes: ["channels:read", "groups:read"],
    why: "membership changes reach the cache at once",
  },
  member_left_channel: { scopes: ["channels:read", "groups:read"], why: "membership changes reach the cache at once" },
} as const satisfies Record<string, ScopeUse>;

/** Features that need a scope of their own. */
export const SLACK_FEATURE_SCOPES = {
  slash_commands: { scopes: ["commands"], why: "/connect and /connections" },
} as const satisfies Record<string, ScopeUse>;

/** A Web API method the code calls. */
export type SlackMethod = keyof typeof SLACK_METHOD_SCOPES;

const ALL_USES: readonly ScopeUse[] = [
  ...Object.values(SLACK_METHOD_SCOPES),
  ...Object.values(SLACK_EVENT_SCOPES),
  ...Object.values(SLACK_FEATURE_SCOPES),
];

/** Every bot scope slaude-connect needs, sorted: exactly what the manifests must ask for. */
export function requiredBotScopes(): string[] {
  return [...new Set(ALL_USES.flatMap((u) => u.scopes))].sort();
}

/** The needed scopes missing from `granted`, each with what breaks without it. */
export function missingScopes(granted: readonly string[]): { scope: string; breaks: string[] }[] {
  const have = new Set(granted);
  return requiredBotScopes()
    .filter((s) => !have.has(s))
    .map((scope) => ({
      scope,
      breaks: [...new Set(ALL_USES.filter((u) => u.scopes.includes(scope)).map((u) => u.why))],
    }));
}
