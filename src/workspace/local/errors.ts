import type { LocalRefusal } from "./model.js";

/** A refused local-workspace action, with a code the console maps to a message. */
export class LocalWorkspaceError extends Error {
  constructor(
    readonly code: LocalRefusal | "too_many_listeners",
    message: string,
  ) {
    super(message);
    this.name = "LocalWorkspaceError";
  }
}
