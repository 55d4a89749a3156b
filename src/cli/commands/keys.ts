import { randomBytes } from "node:crypto";
import { rotateKeys } from "../../vault/rotate.js";
import { CliContext, UsageError } from "../context.js";

export const KEYS_HELP = `slaude-connect keys <rotate|generate>

  generate  Prints a new random master key (base64, 32 bytes).
  rotate    Re-encrypts every stored credential under SLAUDE_ENCRYPTION_KEY, in one transaction.
            Put the old key(s) in SLAUDE_ENCRYPTION_KEY_PREVIOUS (comma-separated) first; after
            a successful rotation they are no longer needed.`;

/** `keys rotate|generate`. */
export async function keysCommand(ctx: CliContext, argv: string[]): Promise<number> {
  const [sub] = argv;
  if (sub === "generate") {
    ctx.out(randomBytes(32).toString("base64"));
    return 0;
  }
  if (sub === "rotate") {
    const n = await rotateKeys({ store: ctx.store, vault: ctx.vault, clock: ctx.clock }, `cli:${ctx.io.env.USER ?? "operator"}`);
    ctx.out(`re-encrypted ${n} credential(s) under key ${ctx.vault.primaryKeyId}`);
    return 0;
  }
  throw new UsageError(KEYS_HELP);
}
