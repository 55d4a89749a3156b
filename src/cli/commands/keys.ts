import { randomBytes } from "node:crypto";
import { rotateKeys } from "../../vault/rotate.js";
import { type CliContext, UsageError } from "../context.js";

export const KEYS_HELP = `slaude-connect keys <rotate|generate>

  generate  Prints a new random master key (base64, 32 bytes).
  rotate    Re-encrypts every stored credential and Slack installation under SLAUDE_ENCRYPTION_KEY,
            in one transaction.
            Put the old key(s) in SLAUDE_ENCRYPTION_KEY_PREVIOUS (comma-separated) first; after
            a successful rotation they are no longer needed. Without SLAUDE_ENCRYPTION_KEY it warns:
            the target is then the development key file in the data directory.`;

/** `keys rotate|generate`. */
export async function keysCommand(ctx: CliContext, argv: string[]): Promise<number> {
  const [sub, ...extra] = argv;
  if (extra.length)
    throw new UsageError(
      `slaude-connect keys ${sub}: takes no options or arguments, got "${extra[0]}" (see slaude-connect --help)`,
    );
  if (sub === "generate") {
    ctx.out(randomBytes(32).toString("base64"));
    return 0;
  }
  if (sub === "rotate") {
    const keys = ctx.keys;
    if (keys.origin !== "env") {
      // Rotating onto the key file next to the database protects nothing: say so before doing it.
      ctx.err(
        `warning: SLAUDE_ENCRYPTION_KEY is not set: re-encrypting under the DEVELOPMENT key in ${keys.devKeyFile ?? "the data directory"}, which anyone who can read the data directory can use. Set SLAUDE_ENCRYPTION_KEY (old key in SLAUDE_ENCRYPTION_KEY_PREVIOUS) to rotate onto a real key.`,
      );
    }
    const n = await rotateKeys(
      { rows: ctx.store, vault: ctx.vault, clock: ctx.clock },
      `cli:${ctx.io.env.USER ?? "operator"}`,
    );
    ctx.out(
      `re-encrypted ${n.connections} credential(s) and ${n.installations} installation(s) under key ${ctx.vault.primaryKeyId}`,
    );
    return 0;
  }
  throw new UsageError(KEYS_HELP);
}
