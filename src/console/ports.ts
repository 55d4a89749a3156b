import type { LocalWorkspace } from "../workspace/local/model.js";
import type { AdminDirectoryPort } from "../workspace/workspace.js";

// What the console needs from the local workspace (src/workspace/local): people, channels,
// threads, inboxes, clicks and the change feed. Cards go to the page exactly as the workspace
// stored them: the page renders the card model's JSON and never decides what a card says.

/** The local workspace as the console uses it. */
export type ConsoleWorkspace = Pick<
  LocalWorkspace,
  | "teamId"
  | "users"
  | "channels"
  | "setMember"
  | "startThread"
  | "threads"
  | "notes"
  | "inbox"
  | "decide"
  | "continueConsent"
  | "subscribe"
>;

/** Who is an admin (the workspace's admin directory). */
export type ConsoleAdmins = AdminDirectoryPort;
