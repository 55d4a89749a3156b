import { registryJsonSchema } from "../../config/registry-json-schema.js";
import { loadRegistry } from "../../config/registry.js";
import { CliContext, UsageError } from "../context.js";

export const REGISTRY_HELP = `slaude-connect registry <schema|check FILE>

  schema      Prints the JSON Schema of the service registry file.
  check FILE  Validates a registry file and lists its services.`;

/** `registry schema|check`. */
export async function registryCommand(ctx: CliContext, argv: string[]): Promise<number> {
  const [sub, file] = argv;
  if (sub === "schema") {
    ctx.out(JSON.stringify(registryJsonSchema(), null, 2));
    return 0;
  }
  if (sub === "check" && file) {
    const reg = loadRegistry(file);
    for (const s of reg.list()) ctx.out(`${s.name}: ${s.entry.transport.type}, capture ${s.entry.capture.strategy}, ttl ${Math.round(s.ttlMs / 60000)}m, ${Object.keys(s.entry.tools).length} classified tool(s)`);
    ctx.out(`${file}: ok`);
    return 0;
  }
  throw new UsageError(REGISTRY_HELP);
}
