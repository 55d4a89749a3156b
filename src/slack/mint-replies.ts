import type { Service } from "../config/registry.js";
import { LoginError } from "../login/errors.js";

/**
 * What the user is told when a login link could not be minted: one sentence per reason, chosen by
 * an exhaustive switch. Anything that is not a LoginError (the store, a bug) is a generic retry.
 */
export function mintFailureReply(err: unknown, service: Service): string {
  const name = service.displayName;
  if (!(err instanceof LoginError))
    return `I could not create a sign-in link for ${name} just now; nothing was stored. Please try again in a moment.`;
  switch (err.code) {
    case "unknown_service":
      return "Signing in is not available for this service right now.";
    case "scope_not_allowed":
      return service.entry.scopes.includes("user")
        ? `${name} cannot be connected for a single thread. Use \`/connect ${service.name}\` to connect your account for all your threads.`
        : `${name} connections are set up by an operator, not from Slack. Ask your slaude-connect admin.`;
    case "needs_thread":
      return `A ${name} connection can only be made from the thread that needs it: ask the assistant there to connect it.`;
  }
}
