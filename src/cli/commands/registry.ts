import { readFileSync } from "node:fs";
import { ConfigError } from "../../config/errors.js";
import { registryJsonSchema } from "../../config/registry-json-schema.js";
import { parseRegistry } from "../../config/registry.js";
import { CliContext, UsageError } from "../context.js";

export const REGISTRY_HELP = `slaude-connect registry <schema|check FILE>

  schema      Prints the JSON Schema of the service registry file.
  check FILE  Validates a registry file and lists its services (exit 1 if it is invalid).`;

/** `registry check FILE`: reports on FILE itself, not on the server's configured registry. */
function check(ctx: CliContext, file: string): number {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    ctx.err(`${file}: cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    return 2;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    ctx.err(`${file}: not valid JSON: ${(e as Error).message}`);
    return 1;
  }
  try {
    const reg = parseRegistry(doc, file);
    for (const s of reg.list()) ctx.out(`${s.name}: ${s.entry.transport.type}, capture ${s.entry.capture.strategy}, ttl ${Math.round(s.ttlMs / 60000)}m, ${Object.keys(s.entry.tools).length} classified tool(s)`);
    ctx.out(`${file}: ok, ${reg.list().length} service(s)`);
    return 0;
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    // parseRegistry's lines already start with FILE: each names the bad path inside it.
    ctx.err(`${file}: not a valid service registry\n${e.message.replace(/^invalid service registry\n/, "")}`);
    return 1;
  }
}

/** `registry schema|check`. */
export async function registryCommand(ctx: CliContext, argv: string[]): Promise<number> {
  const [sub, file, ...extra] = argv;
  if (sub === "schema" && file === undefined) {
    ctx.out(JSON.stringify(registryJsonSchema(), null, 2));
    return 0;
  }
  if (sub === "check" && file && !file.startsWith("-") && extra.length === 0) return check(ctx, file);
  throw new UsageError(REGISTRY_HELP);
}
